"""Issue 33 (honest kernels the name rules refused) and issue 35 class 9 (math flags), on the CPU.

- The judge's build compiles CUB, thrust, NVTX, cuBLAS BLAS-3 with a private handle and TMA entry points,
  and the objects it makes trip no import rule (NVTX's injection loader is compiled out by the judge's
  flags; without them every NVTX object imports dlopen).
- Driver entry points are judged by the name asked for at run time: the judge's gate, linked into every
  extension, binds the submission's calls (nothing left for libcudart), refuses cuCtxCreate however the name
  was built and passes cuTensorMapEncodeTiled on.
- No --use_fast_math: `sinf` stays the accurate function (no sin.approx in the PTX).
- Binding patterns: reshape and other view-like composites from C++, cudaMemcpyDefault, static scratch
  tensors, forward declarations, an extension function named `add`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from cuda_agent.judge.candidate.opgate import OpGate
from cuda_agent.judge.trusted import aten_calls, build_commands, driver_gate, library_rules
from cuda_agent.judge.trusted import build as build_module
from cuda_agent.judge.trusted import pch as pch_module
from cuda_agent.judge.trusted.build import BuildConfig, build_extension, compile_command
from cuda_agent.judge.trusted.device_code import imported_symbols
from cuda_agent.judge.trusted.static_checks import check_imports, check_kernel_sources, check_model_new
from cuda_agent.judge.trusted.toolchain import discover

# Honest idioms in one .cu: CUB with caller-owned temp storage, thrust's default policy, NVTX ranges, a
# cooperative launch, TMA through the runtime's entry point (a literal, and a name built at run time), and
# CUB's device guard (cudaSetDevice of the current device).
IDIOMS_CU = r"""
#include <cooperative_groups.h>
#include <cub/device/device_scan.cuh>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/transform.h>

#include <cstring>

namespace cg = cooperative_groups;

struct square { __host__ __device__ float operator()(float v) const { return v * v; } };

__global__ void two_phase(float* x, int n) {
    cg::grid_group grid = cg::this_grid();
    for (int i = grid.thread_rank(); i < n; i += grid.size()) x[i] += 1.f;
    grid.sync();
    for (int i = grid.thread_rank(); i < n; i += grid.size()) x[i] *= 2.f;
}

extern "C" size_t scan_bytes(int n) {
    size_t bytes = 0;
    cub::DeviceScan::InclusiveSum(nullptr, bytes, (const float*)nullptr, (float*)nullptr, n, (cudaStream_t)0);
    return bytes;
}

extern "C" int scan(void* temp, size_t bytes, const float* x, float* y, int n, cudaStream_t stream) {
    nvtxRangePushA("scan");
    int err = (int)cub::DeviceScan::InclusiveSum(temp, bytes, x, y, n, stream);
    nvtxRangePop();
    return err;
}

extern "C" void squares(float* x, float* y, long n) {
    thrust::device_ptr<float> px(x), py(y);
    thrust::transform(thrust::device, px, px + n, py, square());
}

extern "C" int cooperative(float* x, int n, cudaStream_t stream) {
    void* args[] = {&x, &n};
    return (int)cudaLaunchCooperativeKernel((void*)two_phase, dim3(64), dim3(256), args, 0, stream);
}

extern "C" int probe_entry(const char* name) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    return (int)cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found);
}

extern "C" int probe_tensor_map() { return probe_entry("cuTensorMapEncodeTiled"); }

extern "C" int probe_built_name() {  // a name no source rule can read
    char name[32] = "cu";
    std::strcat(name, "Ctx");
    std::strcat(name, "Create");
    return probe_entry(name);
}

extern "C" int probe_set_device(int device) { return (int)cudaSetDevice(device); }
"""

# BLAS-3 with a private handle bound to the caller's stream: matrix products.
BLAS_CPP = r"""
#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" int blas3(const float* a, float* b, float* c, int n, cudaStream_t stream) {
    cublasHandle_t handle;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
    cublasSetStream(handle, stream);
    const float one = 1.f, zero = 0.f;
    cublasStrmm(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, n, &one,
                a, n, b, n, c, n);
    cublasStrsm(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, n, &one,
                a, n, c, n);
    cublasSsyrk(handle, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, n, &one, a, n, &zero, c, n);
    cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, 0, b, n, 0, &zero, c, n, 0, 1);
    cublasDestroy(handle);
    return 0;
}
"""


@pytest.fixture(scope="module")
def idioms(tmp_path_factory: pytest.TempPathFactory) -> build_module.BuildResult:
    root = tmp_path_factory.mktemp("idioms")
    kernels = root / "kernels"
    kernels.mkdir()
    (kernels / "idioms.cu").write_text(IDIOMS_CU)
    (kernels / "blas.cpp").write_text(BLAS_CPP)
    config = BuildConfig(arch="9.0", cache_dir=root / "objects", precompiled_header=False)
    result = build_extension(kernels, root / "out", config)
    assert result.ok, result.full_log
    return result


@pytest.mark.slow
def test_honest_library_idioms_build_and_import_nothing_refused(idioms: build_module.BuildResult) -> None:
    assert idioms.imports["kernels/idioms.cu"] >= {"cudaLaunchCooperativeKernel", "cudaSetDevice"}
    assert "cublasStrmm_v2" in idioms.imports["kernels/blas.cpp"]
    # The task has a matrix product: nothing is refused. Before issue 33: dlopen/dlsym/getenv (NVTX),
    # cudaSetDevice (CUB's device guard), cudaGetDriverEntryPointByVersion, cublasCreate, cublasStrmm.
    assert check_imports(idioms.imports, {"mm"}) == []
    # The linked extension imports none of the names the gate defines: every call bound to the gate.
    assert idioms.imports[driver_gate.LINKED_MODULE] == set()
    assert not {"dlopen", "dlsym", "getenv"} & idioms.imports["kernels/idioms.cu"]


@pytest.mark.slow
def test_the_driver_gate_judges_the_name_asked_for_at_run_time(idioms: build_module.BuildResult) -> None:
    """Run on the CPU: libcudart answers an allowed request (no driver here: not 800); the gate answers a
    refused one with cudaErrorNotPermitted (800) before libcudart sees it, a name built at run time too."""
    assert idioms.module_path is not None
    probe = (
        "import ctypes, sys, torch\n"  # torch first: its libraries, libcudart among them, as in a worker
        "lib = ctypes.CDLL(sys.argv[1])\n"
        "print(lib.probe_tensor_map(), lib.probe_built_name(), lib.probe_entry(b'cuGetProcAddress'),"
        " lib.probe_entry(b'cuOccupancyMaxActiveClusters'), lib.probe_entry(b'cuMemAlloc_v2'), lib.probe_set_device(7))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(idioms.module_path)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    tensor_map, built, proc_address, occupancy, mem_alloc, set_device = map(int, done.stdout.split())
    assert tensor_map != 800 and occupancy != 800
    assert built == proc_address == mem_alloc == set_device == 800
    assert 'cudaGetDriverEntryPointByVersion("cuCtxCreate") refused' in done.stderr


def test_the_allow_list_reads_driver_variants_as_their_function() -> None:
    assert driver_gate.is_allowed("cuTensorMapEncodeTiled") and driver_gate.is_allowed("cuLaunchKernelEx_ptsz")
    assert driver_gate.is_allowed("cuOccupancyMaxPotentialBlockSize") and driver_gate.is_allowed("cuFuncGetAttribute")
    for name in ("cuCtxCreate_v4", "cuMemAlloc_v2", "cuStreamCreate", "cuModuleLoadData", "cuGetProcAddress_v2",
                 "cuCtxSetLimit", "cuLaunchHostFunc", "cuMemCreate"):  # fmt: skip
        assert not driver_gate.is_allowed(name), name
    assert driver_gate.is_driver_function("cuCtxCreate_v2") and not driver_gate.is_driver_function("cudaMalloc")
    assert not driver_gate.is_driver_function("cublasSgemm_v2") and not driver_gate.is_driver_function("cudnnCreate")
    found = str(check_imports({"kernels/ctx.cpp": {"cuCtxCreate_v2", "cuTensorMapEncodeTiled"}}))
    assert "driver API (cuCtxCreate_v2)" in found  # the allowed one is not named among the refused


def test_nvtx_objects_import_no_injection_loader_with_the_judges_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "ranges.cu"
    source.write_text('#include <nvtx3/nvToolsExt.h>\nextern "C" void f() { nvtxRangePushA("x"); nvtxRangePop(); }\n')

    def imports() -> set[str]:
        obj = tmp_path / "ranges.o"
        done = subprocess.run(compile_command(source, obj, discover(), BuildConfig()), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return imported_symbols(obj)

    assert not {"dlopen", "dlsym", "getenv"} & imports()
    monkeypatch.setattr(build_commands, "NVTX_DEFINES", ())  # the flags are what makes the difference
    assert {"dlopen", "dlsym", "getenv"} <= imports()


def test_the_flags_are_in_every_compile_and_in_the_pch_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tc, config = discover(), BuildConfig()
    cu = compile_command(tmp_path / "k.cu", tmp_path / "k.o", tc, config)
    cpp = compile_command(tmp_path / "b_binding.cpp", tmp_path / "b.o", tc, config)
    pch = build_module.pch_command(tmp_path / "h.h", tmp_path / "h.gch", tc, config)
    for command in (cu, cpp, pch):
        assert set(build_commands.NVTX_DEFINES) <= set(command)
    assert "--use_fast_math" not in cu
    key = pch_module.pch_folder(tc, config, tmp_path, pch_module.PCH_HEADER)
    monkeypatch.setattr(build_commands, "NVTX_DEFINES", ())
    assert pch_module.pch_folder(tc, config, tmp_path, pch_module.PCH_HEADER) != key


def test_sinf_stays_accurate_without_fast_math(tmp_path: Path) -> None:
    """Issue 35 class 9: under --use_fast_math nvcc turns sinf into sin.approx (400x the reference's error
    on large arguments, refused by the precision audit as the kernel's own doing)."""
    source = tmp_path / "wave.cu"
    source.write_text("__global__ void k(const float* x, float* y) { y[threadIdx.x] = sinf(x[threadIdx.x]); }\n")

    def ptx(config: BuildConfig) -> str:
        command = compile_command(source, tmp_path / "wave.ptx", discover(), config)
        command[command.index("-c")] = "-ptx"
        done = subprocess.run(command, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return (tmp_path / "wave.ptx").read_text()

    assert "sin.approx" not in ptx(BuildConfig())
    assert "sin.approx" in ptx(BuildConfig(fast_math=True))


HONEST_SOURCES = {
    "private cuBLAS handle on the current stream": (
        "void g(cudaStream_t s) { cublasHandle_t h; cublasCreate(&h); cublasSetStream(h, s); cublasSgemm(h); }"
    ),
    "cuBLASLt with PyTorch's Lt workspace": (
        "void g() { auto h = at::cuda::getCurrentCUDABlasLtHandle(); void* w = at::cuda::getCUDABlasLtWorkspace();"
        " size_t n = at::cuda::getCUDABlasLtWorkspaceSize(); cublasLtMatmul(h); }"
    ),
    "BLAS-3": "void g(cublasHandle_t h) { cublasStrmm(h); cublasStrsm_v2(h); cublasSsyrk(h); cublasSgemmBatched(h); }",
    "TMA entry point": (
        'void g(void** fn) { cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", fn, 12000, 0, nullptr); }'
    ),
    "static scratch workspace": (
        "static torch::Tensor scratch;\nvoid g(int64_t n) { if (scratch.numel() < n) scratch = torch::empty({n}); }"
    ),
    "forward declaration": "static torch::Tensor add_forward(torch::Tensor a, torch::Tensor b);",
    "default-direction copy": "void g(void* d, const void* s, cudaStream_t st) { cudaMemcpy2DAsync(d, 8, s, 4, 4, 16, "
    "cudaMemcpyDefault, st); }",
    "reshape in a binding": "torch::Tensor g(torch::Tensor x) { return x.reshape({-1, 64}).flatten(); }",
    "device guard of the current device": "void g() { int d; cudaGetDevice(&d); cudaSetDevice(d); }",
}


@pytest.mark.parametrize("case", sorted(HONEST_SOURCES))
def test_honest_sources_pass_the_source_rules(tmp_path: Path, case: str) -> None:
    (tmp_path / "x_binding.cpp").write_text(HONEST_SOURCES[case] + "\n")
    assert check_kernel_sources(tmp_path, {"mm", "relu"}, preprocess=False) == []


@pytest.mark.parametrize(
    ("call", "symbol", "expected"),
    [("cublasSaxpy(h, n, &a, x, 1, y, 1);", "cublasSaxpy_v2", "BLAS-1 vector update"),
     ("cublasIsamax(h, n, x, 1, &i);", "cublasIsamax_v2", "index reduction"),
     ("cublasSgeam(h);", "cublasSgeam", "elementwise"),
     ("cublasSdgmm(h);", "cublasSdgmm", "diagonal scaling"),
     ("cublasDotEx(h);", "cublasDotEx", "BLAS-1"),
     ("cudnnSoftmaxForward(h);", "cudnnSoftmaxForward", "softmax"),
     ("cudnnBatchNormalizationForwardInference(h);", "cudnnBatchNormalizationForwardInference", "normalisation")],
)  # fmt: skip
def test_library_routines_that_are_not_products_or_convolutions_are_refused(
    tmp_path: Path, call: str, symbol: str, expected: str
) -> None:
    (tmp_path / "lib.cpp").write_text(f"void g() {{\n    {call}\n}}\n")
    found = check_kernel_sources(tmp_path, {"mm", "conv2d"}, preprocess=False)
    assert any(str(f).startswith("kernels/lib.cpp:2") for f in found), found
    found = check_imports({"kernels/lib.cpp": {symbol}}, {"mm", "conv2d"})
    assert any(expected in str(f) for f in found), found
    assert library_rules.refused_routine("cublasStrmm_v2") is None
    assert library_rules.refused_routine("cudnnConvolutionBiasActivationForward") is None


def test_the_gate_name_in_a_literal_is_named_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "ctx.cpp").write_text('void g(void** f) {\n  cudaGetDriverEntryPoint("cuMemAlloc", f, 0, nullptr);\n}\n')
    found = check_kernel_sources(tmp_path, preprocess=False)
    assert any("kernels/ctx.cpp:2" in str(f) and "cuMemAlloc" in str(f) for f in found), found


def test_an_extension_function_named_add_is_not_state() -> None:
    source = (
        "import torch\nimport torch.nn as nn\nimport cuda_extension\nimport cuda_extension as ext\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, a, b):\n"
        "        c = cuda_extension.add(a, b)\n        return ext.update(c)\n"
    )
    assert check_model_new(source) == []
    # state stays state: a module-level container, an attribute of a module, self
    for body in ("SEEN.add(a)", "torch.cuda.seen.add(a)", "self.seen.add(a)"):
        stateful = "import torch\nimport torch.nn as nn\nSEEN = set()\n\nclass ModelNew(nn.Module):\n" \
                   f"    def forward(self, a):\n        {body}\n        return a\n"  # fmt: skip
        assert any("keep state" in str(f) for f in check_model_new(stateful)), body


def test_view_like_composites_are_composite_and_their_copies_are_seen() -> None:
    """Every op allowed as a view-like composite has no kernel of its own (CompositeImplicitAutograd in
    every overload: it dispatches as the ops it is made of), and where the tensor allows no view the op
    gate sees the copy it makes."""
    for op in sorted(aten_calls.COMPOSITE_VIEWS):
        packet = getattr(torch.ops.aten, op)
        for overload in packet.overloads():
            name = f"aten::{op}" + ("" if overload == "default" else f".{overload}")
            assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd"), name
    x = torch.randn(8, 6)
    for contiguous, expected in ((x, ""), (x.t(), "aten.clone")):
        gate = OpGate(poison=False)
        with gate:
            contiguous.reshape(48)
        assert gate.report().startswith(expected) and bool(gate.forbidden) == bool(expected)
    reshape = "_ZN2at4_ops7reshape4callERKNS_6TensorEN3c108ArrayRefINS5_6SymIntEEE"
    flatten = "_ZN2at4_ops18flatten_using_ints4callERKNS_6TensorEll"
    assert aten_calls.forbidden_operators({reshape, flatten}) == []
    assert aten_calls.forbidden_operators({"_ZN2at4_ops11narrow_copy4callERKNS_6TensorElN3c106SymIntES5_"}) == [
        "narrow_copy"
    ]
    assert "at::cuda::blas" in str(check_imports({"kernels/g.cpp": {"_ZN2at4cuda4blas4gemmIfEEvPcEEv"}}))


def test_skill_md_states_the_allow_list_and_the_build_flags() -> None:
    """The agent is told every driver function the gate passes and that fast math is off."""
    from cuda_agent.workspace.files import template_path

    skill = template_path("SKILL.md").read_text()
    section = skill[skill.index("### Libraries and build") : skill.index("## Workspace")]
    for name in driver_gate.ALLOWED:
        assert f"`{name}" in section, name
    assert "Fast math is off" in section and not BuildConfig().fast_math
    assert all(flag in section for flag in ("-O3", "-DNVTX_DISABLE", "--expt-relaxed-constexpr"))
