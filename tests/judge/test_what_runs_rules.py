"""The static rules of issue 33 (what runs): run-time symbol lookup, device code loaded or registered at
run time, the profiler's state, and system calls from inline asm, in the symbols a built object imports
(whatever the source spelled) and in the preprocessed source (readable reasons, defence in depth). The
line behind them is attribution by binary (test_what_runs.py): a function found without importing it,
or a kernel loaded at run time, is still PyTorch's or in no binary, and foreign."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cuda_agent.judge.trusted.device_code import imported_symbols
from cuda_agent.judge.trusted.static_checks import check_imports, check_kernel_sources


@pytest.mark.parametrize(
    ("symbol", "words"),
    [
        ("dl_iterate_phdr", "looks up loaded libraries"),
        ("dladdr", "looks up loaded libraries"),
        ("dladdr1", "looks up loaded libraries"),
        ("dlinfo", "looks up loaded libraries"),
        ("_dl_find_object", "looks up loaded libraries"),
        ("_r_debug", "looks up loaded libraries"),
        ("getauxval", "looks up loaded libraries"),
        ("environ", "looks up loaded libraries"),
        ("cuModuleLoadData", "loads device code at run time"),
        ("cuLibraryLoadData", "loads device code at run time"),
        ("cudaLibraryLoadData", "loads device code at run time"),
        ("cudaLibraryGetKernel", "loads device code at run time"),
        ("nvrtcCompileProgram", "loads device code at run time"),
        ("nvJitLinkCreate", "loads device code at run time"),
        ("cuLinkAddData_v2", "loads device code at run time"),
        ("_ZN5torch8profiler4impl15profilerEnabledEv", "inspects the profiler"),
        ("_ZN5torch8profiler4impl12profilerTypeEv", "inspects the profiler"),
        ("_ZN5torch8autograd8profiler15profilerEnabledEv", "inspects the profiler"),
        ("_ZN2at12hasCallbacksEv", "inspects the profiler"),
        ("_ZN2at23isRecordFunctionEnabledEv", "inspects the profiler"),
    ],
)
def test_imports_that_find_or_load_code_at_run_time_are_refused(symbol: str, words: str) -> None:
    findings = [str(f) for f in check_imports({"kernels/x_binding.cpp": {symbol, "cudaLaunchKernel"}})]
    assert any(words in f and symbol in f for f in findings), findings


def test_registering_device_code_by_hand_outside_a_cu_object() -> None:
    nvcc_object = {"__cudaRegisterFatBinary", "__cudaRegisterFunction", "__cudaRegisterFatBinaryEnd"}
    assert check_imports({"kernels/k.cu": nvcc_object}) == []  # what nvcc generates for its own kernels
    findings = [str(f) for f in check_imports({"kernels/k_binding.cpp": nvcc_object})]
    assert any("registers device code by hand" in f for f in findings), findings


@pytest.mark.parametrize(
    "symbols",
    [
        {"_ZN2at4_ops19empty_memory_format4callEN3c108ArrayRefINS2_6SymIntEEESt8optionalINS2_10ScalarTypeEES6_INS2_6LayoutEES6_INS2_6DeviceEES6_IbES6_INS2_12MemoryFormatEE",
         "_ZN2at4cuda26getCurrentCUDABlasHandleEv", "cublasSgemm_v2", "cublasSetStream_v2", "cudaGetLastError",
         "_ZN3c104cuda20getCurrentCUDAStreamEa", "__dynamic_cast", "cudaFuncSetAttribute", "cudaLaunchCooperativeKernel",
         "cudaStreamBeginCapture", "cudaGraphInstantiateWithFlags", "cudaGraphLaunch", "cudaStreamEndCapture"},
    ],
)
def test_honest_imports_pass(symbols: set[str]) -> None:
    """Allocation, cuBLAS on torch's handle, cooperative launches, a graph of one's own kernels."""
    assert check_imports({"kernels/x_binding.cpp": symbols}, {"addmm"}) == []


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("#include <link.h>\nstatic int cb(struct dl_phdr_info* i, size_t, void*) { return 0; }\n"
         "void f() { dl_iterate_phdr(cb, nullptr); }\n", "looks up loaded libraries"),
        ("#include <elf.h>\nconst Elf64_Ehdr* h = nullptr;\n", "looks up loaded libraries"),
        ('const char* maps = "/proc/self/maps";\n', "looks up loaded libraries"),
        ("#include <cuda.h>\nvoid f(CUmodule* m, const void* p) { cuModuleLoadData(m, p); }\n", "loads or registers device code"),
        ('asm(".pushsection .nv_fatbin\\n.popsection");\n', "loads or registers device code"),
        ("extern \"C\" void** __cudaRegisterFatBinary(void*);\n", "loads or registers device code"),
        ('long f(long n) { long r; asm volatile("syscall" : "=a"(r) : "a"(n) : "rcx", "r11", "memory"); return r; }\n',
         "makes system calls"),
    ],
)
def test_source_spellings_are_named(tmp_path: Path, source: str, words: str) -> None:
    (tmp_path / "x_binding.cpp").write_text(source)
    findings = [str(f) for f in check_kernel_sources(tmp_path, preprocess=False)]
    assert any(words in f for f in findings), findings


def test_device_inline_ptx_is_not_a_system_call(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text('__global__ void k(float* x) { float y; asm volatile("mov.f32 %0, 1.0;" : "=f"(y)); '
                                   'x[threadIdx.x] = y; }\n')  # fmt: skip
    assert check_kernel_sources(tmp_path, preprocess=False) == []


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_a_phdr_walk_is_seen_in_the_built_object_however_spelled(tmp_path: Path) -> None:
    """The walk spelled through a function pointer named by a macro paste: the object still imports it."""
    (tmp_path / "w.cpp").write_text(
        "#include <link.h>\n#define WALK(a, b) a##_iterate_##b\n"
        "static int cb(struct dl_phdr_info*, size_t, void*) { return 0; }\n"
        "int (*volatile walk)(int (*)(struct dl_phdr_info*, size_t, void*), void*) = WALK(dl, phdr);\n"
        "int run() { return walk(cb, nullptr); }\n"
    )
    obj = tmp_path / "w.o"
    subprocess.run(["g++", "-c", "-fPIC", str(tmp_path / "w.cpp"), "-o", str(obj)], check=True, capture_output=True)
    symbols = imported_symbols(obj)
    assert "dl_iterate_phdr" in symbols
    assert any("looks up loaded libraries" in str(f) for f in check_imports({"kernels/w.cpp": symbols}))


HONEST_DEFAULTS = r"""
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cub/cub.cuh>
#include <thrust/device_ptr.h>
#include <thrust/transform.h>
namespace cg = cooperative_groups;
struct Twice { __host__ __device__ float operator()(float x) const { return 2.f * x; } };
__global__ void coop_scale(float* x, int n) {
    cg::grid_group grid = cg::this_grid();
    for (int i = grid.thread_rank(); i < n; i += grid.size()) x[i] *= 0.5f;
    grid.sync();
}
__global__ void add_one(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.f; }
extern "C" void honest_defaults(float* x, float* sum, void* temp, size_t temp_bytes, int n, cudaStream_t stream) {
    thrust::device_ptr<float> p(x);
    thrust::transform(p, p + n, p, Twice());                       // thrust's default execution policy
    size_t need = 0;
    cub::DeviceReduce::Sum(nullptr, need, x, sum, n);               // CUB on stream 0
    if (need <= temp_bytes) cub::DeviceReduce::Sum(temp, need, x, sum, n);
    void* args[] = {&x, &n};
    cudaLaunchCooperativeKernel((void*)coop_scale, dim3(2), dim3(128), args, 0, stream);
    cudaGraph_t graph; cudaGraphExec_t exec;                         // a graph of its own kernel
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    add_one<<<(n + 255) / 256, 256, 0, stream>>>(x, n);
    cudaStreamEndCapture(stream, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphLaunch(exec, stream);
    cudaGraphExecDestroy(exec); cudaGraphDestroy(graph);
}
"""
ISSUE_33_RULES = ("looks up loaded libraries", "loads device code", "inspects the profiler", "registers device code",
                  "loads or registers device code", "makes system calls")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_honest_defaults_trip_none_of_these_rules(tmp_path: Path) -> None:
    """thrust's default execution policy, CUB on stream 0, a cooperative launch and a CUDA graph of one's own
    kernel: none of the rules of issue 33 fires on the source or the built object, and no kernel of it is
    named like one of PyTorch's (their CUB is `at_cuda_detail::cub`, the build's is versioned by its arch)."""
    from cuda_agent.judge.decide.coverage_stage import judge_kernel_lists
    from cuda_agent.judge.trusted.device_code import kernels, reserved_kernels

    (tmp_path / "h.cu").write_text(HONEST_DEFAULTS)
    obj, lib = tmp_path / "h.o", tmp_path / "h.so"
    subprocess.run(["nvcc", "-c", str(tmp_path / "h.cu"), "-o", str(obj), "-gencode", "arch=compute_90a,code=sm_90a",
                    "--no-compress", "-std=c++20", "-Xcompiler", "-fPIC"], check=True, capture_output=True, timeout=600)  # fmt: skip
    subprocess.run(["g++", "-shared", "-o", str(lib), str(obj)], check=True, capture_output=True, timeout=120)
    findings = [str(f) for f in check_imports({"kernels/h.cu": imported_symbols(obj)}, {"addmm"})]
    findings += [str(f) for f in check_kernel_sources(tmp_path, preprocess=False)]
    assert not [f for f in findings if any(rule in f for rule in ISSUE_33_RULES)], findings
    assert reserved_kernels(kernels(lib), judge_kernel_lists((), None, False).torch) == []
