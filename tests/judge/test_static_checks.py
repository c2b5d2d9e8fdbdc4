"""Static checks: each obvious cheat gets a reason naming the line; honest sources pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.judge.coverage import coverage_report, kernel_names
from cuda_agent.judge.static_checks import check_kernel_sources, check_model_new

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
    "cublasSaxpy(h, n, &a, x, 1, y, 1);": "other than a GEMM",
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


def test_kernel_names_and_coverage_share(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(
        "template <int B> __global__ void __launch_bounds__(256) fused_kernel(float* x) {}\n"
        "__global__ void helper(float* x) {}\n"
    )
    names = kernel_names(tmp_path)
    assert names == {"fused_kernel", "helper"}
    kernels = {
        "void fused_kernel<256>(float*)": 80.0,
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>": 5.0,
        "sm90_xmma_gemm_f32f32_tf32f32": 100.0,
    }
    with_gemm = coverage_report(kernels, names, {"addmm"})
    assert with_gemm.share == 1.0
    without_gemm = coverage_report(kernels, names, {"relu"})
    assert without_gemm.share == pytest.approx(80 / 180)
    assert "sm90_xmma_gemm" in without_gemm.describe_foreign()


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


@pytest.mark.parametrize(
    "line",
    [
        "static torch::Tensor cached;",
        "static std::unordered_map<long, at::Tensor> memo;",
        "static torch::Tensor out = torch::empty({4});",
        "static at::Tensor scratch(torch::empty({4}));",
        "static std::vector<std::pair<int, torch::Tensor>> kept;",
        "static const torch::Tensor& alias = x;",
        "cudaMemcpy(h, d, 4, cudaMemcpyDeviceToHost);",
    ],
)
def test_cpp_state_and_host_reads_are_refused(tmp_path: Path, line: str) -> None:
    (tmp_path / "b_binding.cpp").write_text(f"void f() {{\n    {line}\n}}\n")
    assert check_kernel_sources(tmp_path), line


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
