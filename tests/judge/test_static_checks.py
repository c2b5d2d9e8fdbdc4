"""Static checks: each obvious cheat gets a reason naming the line; honest sources pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.judge.decide.coverage import coverage_report
from cuda_agent.judge.trusted.static_checks import check_kernel_sources, check_model_new

EXAMPLES = Path(__file__).parents[2] / "examples"

HONEST = """
import torch
import torch.nn as nn
import cuda_extension

class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim))
        self.stream = None  # an attribute named like a forbidden one is fine on self

    def forward(self, x):
        seed = 3  # so is a local variable
        return cuda_extension.op_forward(x.view(-1), self.weight, seed)
"""


def test_honest_model_new_passes() -> None:
    assert check_model_new(HONEST) == []


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("import os", "import of os"),
        ("from model import Model", "import from model"),
        ("import inspect", "import of inspect"),
        (
            "import torch\nfrom torch.utils._python_dispatch import _disable_current_modes",
            "import from torch.utils",
        ),
        ("import torch\ntry:\n    import cuda_extension\nexcept ImportError:\n    pass", "try/except"),
        ("import torch\ntorch.cuda.synchronize = lambda: None", "patches a module"),
        ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True", "matmul precision"),
        ("import torch\nx = torch._C._get_dispatch_mode", "_get_dispatch_mode"),
        ("import torch\nf = torch.ops.aten.relu", "torch.ops"),
        ("import torch\ntorch.manual_seed(0)", "seeds the random generator"),
        ("def f():\n    return eval('1')", "evaluates code"),
        (
            "import torch\nclass L(torch.Tensor):\n    def __torch_function__(self):\n        pass",
            "lazy outputs",
        ),
        ("n = 0\ndef f():\n    global n\n    n += 1", "global/nonlocal"),
    ],
)
def test_cheating_python_is_rejected_with_a_reason(snippet: str, expected: str) -> None:
    findings = check_model_new(snippet)
    assert findings, snippet
    assert any(expected in str(f) for f in findings), [str(f) for f in findings]


CPP_CHEATS = {
    "std::thread t([]{}); t.detach();": "starts a thread",
    "attr.accessPolicyWindow.num_bytes = 1 << 20;": "L2 cache persistence",
    'PyRun_SimpleString("import torch");': "Python interpreter",
    'auto m = py::module_::import("torch");': "Python interpreter",
    "__attribute__((constructor)) static void init() {}": "at load time",
    "auto y = at::native::relu(x);": "operator implementations",
    "cublasSaxpy(h, n, &a, x, 1, y, 1);": "other than a matrix product",
    "cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);": "lowers the precision",
    'system("ls");': "starts a process",
    'FILE* f = fopen("x", "w");': "files",
    'const char* v = getenv("X");': "environment",
}


@pytest.mark.parametrize(("line", "expected"), list(CPP_CHEATS.items()))
def test_cheating_cpp_is_rejected_with_file_and_line(tmp_path: Path, line: str, expected: str) -> None:
    (tmp_path / "op_binding.cpp").write_text(f"// header\n#include <x.h>\nvoid f() {{\n    {line}\n}}\n")
    findings = check_kernel_sources(tmp_path)
    assert any(expected in str(f) and "kernels/op_binding.cpp:4" in str(f) for f in findings), findings


def test_comments_do_not_trigger_and_libraries_need_the_right_task(tmp_path: Path) -> None:
    (tmp_path / "gemm.cpp").write_text(
        "// std::thread is not used\n/* system(x) */\nvoid g() { cublasSgemm(h); }\n"
    )
    assert check_kernel_sources(tmp_path) == []
    assert check_kernel_sources(tmp_path, {"addmm", "relu"}) == []
    assert "no matrix product" in str(check_kernel_sources(tmp_path, {"relu"}))
    (tmp_path / "conv.cpp").write_text("void c() { cudnnConvolutionForward(h); }\n")
    assert "no convolution" in str(check_kernel_sources(tmp_path, {"addmm"}))


def test_bundled_honest_examples_pass_static_checks() -> None:
    for name in ("elementwise_chain", "row_softmax", "layernorm", "gemm_bias_relu"):
        example = EXAMPLES / name
        assert check_model_new((example / "model_new.py").read_text()) == [], name
        assert check_kernel_sources(example / "kernels", {"addmm"}) == [], name


def test_coverage_share_attributes_by_exact_binary_names() -> None:
    """Submitted = an entry of the extension's device code by its exact (demangled) name; cuBLAS counts
    only for a GEMM task and only as cuBLAS's own binaries list it; PyTorch's fills are neutral, copies
    are copies; a kernel of PyTorch's binaries is never library (test_what_runs.py: real lists)."""
    from cuda_agent.judge.trusted.device_code import normalise
    from cuda_agent.judge.trusted.library_kernels import KernelLists

    fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"
    aten_gemm_name = "void at::native::cutlass_gemm_kernel<float>(float*)"
    lists = KernelLists(torch=frozenset({normalise(fill), normalise(aten_gemm_name)}),
                        libraries={"cublas": frozenset({normalise("sm90_xmma_gemm_f32f32_tf32f32")})})  # fmt: skip
    names = {"void fused_kernel<256>(float*)", "helper(float*)"}
    kernels = {
        "void fused_kernel<256>(float*)": 80.0,
        fill: 5.0,
        "sm90_xmma_gemm_f32f32_tf32f32": 100.0,
        "Memcpy DtoD (Device -> Device)": 30.0,
    }
    with_gemm = coverage_report(kernels, names, {"addmm"}, lists=lists)
    assert with_gemm.share == 1.0 and with_gemm.copies_us == 30.0 and with_gemm.neutral_us == 5.0
    without_gemm = coverage_report(kernels, names, {"relu"}, lists=lists)
    assert without_gemm.share == pytest.approx(80 / 180)
    assert "sm90_xmma_gemm" in without_gemm.describe_foreign()
    # the same base name with other template arguments (a different function) is not submitted
    other = coverage_report({"void fused_kernel<128>(float*)": 10.0}, names, {"relu"}, lists=lists)
    assert other.share == 0.0
    aten_gemm = coverage_report({aten_gemm_name: 10.0}, names, {"addmm"}, lists=lists)
    assert aten_gemm.share == 0.0
    # cuBLAS kernels count only for a submission whose own objects call cuBLAS (else ATen launched them)
    from cuda_agent.judge.decide.coverage import linked_libraries

    assert linked_libraries({"kernels/g.cpp": {"cublasSgemm_v2", "cudaMalloc"}}) == {"cublas"}
    by_aten = coverage_report(kernels, names, {"addmm"}, lists=lists,
                              libraries=linked_libraries({"kernels/k.cu": {"cudaMalloc"}}))  # fmt: skip
    assert by_aten.share == pytest.approx(80 / 180)


STATEFUL = [
    "class M:\n    def forward(self, x):\n        self.last = x\n        return x",
    "class M:\n    def forward(self, x):\n        self.cache[x.data_ptr()] = x\n        return x",
    "class M:\n    def forward(self, x):\n        self.calls += 1\n        return x",
    "SEEN = []\nclass M:\n    def forward(self, x):\n        SEEN.append(x)\n        return x",
]


@pytest.mark.parametrize("source", STATEFUL)
def test_forward_must_not_keep_state(source: str) -> None:
    assert any("keep state" in str(f) for f in check_model_new(source)), source


def test_local_containers_in_forward_are_fine() -> None:
    source = "class M:\n    def forward(self, x):\n        outs = []\n        outs.append(x)\n        return outs[0]"
    assert check_model_new(source) == []


def test_cpp_host_reads_are_refused(tmp_path: Path) -> None:
    (tmp_path / "b_binding.cpp").write_text("void f() {\n    cudaMemcpy(h, d, 4, cudaMemcpyDeviceToHost);\n}\n")
    assert "copies device data to the host" in str(check_kernel_sources(tmp_path))


@pytest.mark.parametrize(
    "line",
    [
        "static torch::Tensor cached;",
        "static std::unordered_map<long, at::Tensor> memo;",
        "static torch::Tensor out = torch::empty({4});",
        "static at::Tensor scratch(torch::empty({4}));",
        "static std::vector<std::pair<int, torch::Tensor>> kept;",
        "static torch::Tensor my_op_forward(torch::Tensor x);",
        "cudaMemcpy2DAsync(dst, 8, src, 4, 4, 16, cudaMemcpyDefault, stream);",
    ],
)
def test_static_tensors_and_default_copies_are_left_to_the_dynamic_checks(tmp_path: Path, line: str) -> None:
    """Changed for issue 33 (these were refused before). A static tensor is a scratch workspace as often
    as a cache, and a forward declaration is neither: what caching gains is taken away dynamically (fresh
    inputs for every timed call, every call's output kept and checked after the round, so an output in
    static memory is overwritten by the next call). cudaMemcpyDefault between device tensors is a device copy."""
    (tmp_path / "b_binding.cpp").write_text(f"void f() {{\n    {line}\n}}\n")
    assert check_kernel_sources(tmp_path) == [], line


@pytest.mark.parametrize(
    "source",
    [
        "static torch::Tensor my_op_forward(torch::Tensor x) {\n    return x;\n}\n",
        "static at::Tensor f(const at::Tensor& a,\n                   const at::Tensor& b) noexcept {\n    return a;\n}\n",
        "static std::vector<torch::Tensor> split(torch::Tensor x) {\n    return {x};\n}\n",
    ],
)
def test_static_functions_returning_tensors_are_fine(tmp_path: Path, source: str) -> None:
    """The binding pattern SKILL.md teaches: a static function is not kept state."""
    (tmp_path / "b_binding.cpp").write_text(source)
    assert check_kernel_sources(tmp_path) == []


def test_global_math_settings_from_cpp_are_refused(tmp_path: Path) -> None:
    (tmp_path / "mode.cpp").write_text(
        "struct S { S() { at::globalContext().setAllowTF32CuBLAS(true); } } s;\n"
    )
    assert "global math settings" in str(check_kernel_sources(tmp_path))


def test_the_examples_in_skill_md_pass_the_static_checks(tmp_path: Path) -> None:
    """An agent that follows SKILL.md to the letter must not be refused by the judge."""
    import re

    from cuda_agent.workspace.files import template_path

    skill = template_path("SKILL.md").read_text()
    blocks = re.findall(r"```(cuda|cpp|python)\n(.*?)```", skill, flags=re.S)
    assert {lang for lang, _ in blocks} >= {"cuda", "cpp", "python"}
    for index, (lang, code) in enumerate(blocks):
        if lang == "python":
            assert check_model_new(code) == [], code
        else:
            (tmp_path / f"k{index}{'.cu' if lang == 'cuda' else '_binding.cpp'}").write_text(code)
    assert check_kernel_sources(tmp_path) == []


# ---- preprocessed matching (issue 12): spelling no longer hides a call; harmless calls are not refused ----
EVASIONS = {
    "splice": ('void f() { int fd = open\\\nat(0, "x", 0); }\n', "opens or changes files"),
    "paste": ('#define CAT(a, b) a##b\nvoid f() { CAT(posix_, spawnp)(0, "x", 0, 0, 0, 0); }\n', "starts a process"),
    "macro_type": ("#include <fstream>\n#define OUT std::basic_ofstream<char>\nvoid f() { OUT o; }\n", "files"),
    "inc_body": ('#include "helper.inc"\n', "starts a thread"),
    "aliased_pybind": (
        "#include <pybind11/pybind11.h>\nnamespace q = pybind11;\n"
        'void f() { q::module_::import("torch").attr("cuda"); }\n',
        "Python interpreter",
    ),
    "line_directive": ('#line 1 "/usr/include/stdio.h"\nvoid f() {}\n', "#line directives"),
    "asm_label": ('extern "C" int run(const char*) __asm__("PyRun_SimpleString");\n', "asm label"),
    "profiler_probe": ("bool f() { return torch::autograd::profiler::profilerEnabled(); }\n", "profiler"),
}


@pytest.mark.parametrize("case", sorted(EVASIONS))
def test_spelling_tricks_are_seen_through_the_preprocessor(tmp_path: Path, case: str) -> None:
    source, expected = EVASIONS[case]
    (tmp_path / "helper.inc").write_text("#include <thread>\ninline void g() { std::thread t([]{}); t.join(); }\n")
    (tmp_path / "x_binding.cpp").write_text(source)
    findings = check_kernel_sources(tmp_path)
    assert any(expected in str(f) for f in findings), [str(f) for f in findings]


HARMLESS = [
    "int w = at::cuda::warp_size();",
    "cudaStream_t s = at::cuda::getDefaultCUDAStream().stream();",
    "auto side = at::cuda::getStreamFromPool(); at::cuda::CUDAEvent e; e.record(); e.block(side);",
    "cudaMemcpy2DAsync(dst, 8, src, 4, 4, 16, cudaMemcpyDeviceToDevice, stream);",
    'TORCH_CHECK(x.is_cuda(), "PyTorch wants open(files) here");',
    "cudaFuncAttributes attr; cudaFuncGetAttributes(&attr, (const void*)nullptr);",
]


def test_harmless_calls_are_not_refused(tmp_path: Path) -> None:
    """One unit holding them all (preprocessing torch's headers costs seconds)."""
    body = "\n    ".join(HARMLESS)
    (tmp_path / "ok_binding.cpp").write_text(
        "#include <torch/types.h>\n#include <ATen/cuda/CUDAContext.h>\n#include <ATen/cuda/CUDAEvent.h>\n"
        f"void f(torch::Tensor x, void* dst, const void* src, cudaStream_t stream) {{\n    {body}\n}}\n"
    )
    assert check_kernel_sources(tmp_path) == []


def test_gemv_needs_a_matrix_product_and_streams_must_be_joined(tmp_path: Path) -> None:
    (tmp_path / "mv.cpp").write_text("void g(void* h) { cublasSgemv_v2(h, 0, 4, 4, 0, 0, 4, 0, 1, 0, 0, 1); }\n")
    assert check_kernel_sources(tmp_path, {"mv"}) == []
    assert "no matrix product" in str(check_kernel_sources(tmp_path, {"relu"}))
    (tmp_path / "mv.cpp").unlink()
    (tmp_path / "s.cpp").write_text("void g() { cudaStream_t s; cudaStreamCreate(&s); }\n")
    assert "never joins" in str(check_kernel_sources(tmp_path))
    (tmp_path / "s.cpp").write_text("void g(cudaEvent_t e) { cudaStream_t s; cudaStreamCreate(&s); cudaStreamWaitEvent(0, e, 0); }\n")
    assert check_kernel_sources(tmp_path) == []
    # A private cuBLAS handle is allowed since issue 33 (its stream, workspace and math are seen dynamically).
    (tmp_path / "h.cpp").write_text("void g() { cublasHandle_t h; cublasCreate(&h); }\n")
    assert check_kernel_sources(tmp_path) == []


def test_imported_symbols_are_checked_whatever_the_spelling() -> None:
    from cuda_agent.judge.trusted.static_checks import check_imports

    honest = {"kernels/a_binding.cpp": {"PyObject_SetAttrString", "PyGILState_Ensure", "cudaLaunchKernel"}}
    assert check_imports(honest, {"relu"}) == []
    for symbol, expected in [("PyRun_SimpleStringFlags", "Python"), ("PyImport_ImportModule", "Python"),
                             ("posix_spawnp", "processes"), ("openat", "files"), ("pthread_create", "threads"),
                             ("cublasSaxpy_v2", "matrix products"), ("cublasIsamax_v2", "index reduction"),
                             ("cudnnSoftmaxForward", "softmax")]:  # fmt: skip
        found = check_imports({"kernels/x.cpp": {symbol}}, {"addmm", "conv2d"})
        assert any(expected in str(f) for f in found), (symbol, found)
    # Changed for issue 33: a private cuBLAS handle is not refused.
    assert check_imports({"kernels/x.cpp": {"cublasCreate_v2", "cublasSgemm_v2"}}, {"addmm"}) == []
    assert "no convolution" in str(check_imports({"kernels/c.cpp": {"cudnnSoftmaxForward"}}, {"relu"}))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import torch\nE = torch.cuda.Event\nE.elapsed_time = None", "assigning to E.elapsed_time"),
        ("import torch\ntorch.cuda.os.system('x')", "operating system"),
        ("import torch\ndef f(m):\n    type(m).__setattr__(m, 'x', 1)", "patches attributes"),
        ("import torch\ng = torch.nn.Module.__dict__", "namespace"),
        ("import torch\ndel torch.cuda.synchronize", "deleting"),
        ("import torch\ndef f(fn):\n    return fn.__globals__", "module globals"),
        ("import torch\nflag = torch.autograd._profiler_enabled()", "private attribute"),
    ],
)
def test_reaching_the_judges_objects_without_naming_them_is_refused(source: str, expected: str) -> None:
    """Class 1 of issue 12: __dict__, type.__setattr__, aliases and module attributes, not just names."""
    assert any(expected in str(f) for f in check_model_new(source)), check_model_new(source)
