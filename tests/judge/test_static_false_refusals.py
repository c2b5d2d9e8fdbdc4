"""Static rules narrowed after the honest probe of issue 33's follow-up (tests/adversarial/00_honest_* cases
named below): each honest spelling passes, and the cheat each rule exists for is still refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.judge.trusted import library_rules
from cuda_agent.judge.trusted.static_checks import GEMM_OPS, check_kernel_sources, check_model_new

SKILL = Path(__file__).parents[2] / "src/cuda_agent/workspace/template/SKILL.md"


def _source(tmp_path: Path, body: str, name: str = "op.cu", ops: set[str] | None = None) -> list[str]:
    (tmp_path / name).write_text(f"#include <x.h>\n{body}\n")
    return [str(f) for f in check_kernel_sources(tmp_path, ops, preprocess=False)]


# (honest spelling that must pass, cheats the rule exists for that must stay refused), per finding
CPP_PAIRS = {
    # 1. "calls into the Python interpreter": ordinary C++ named eval/exec/handle/attr (horner_static_eval, plan_exec_softmax,
    # cublas_static_member_handle, pdl_launch_attr_member)
    "python": (
        [
            "template <int C> struct Horner { static float eval(float x) { return x; } };\n"
            "__device__ float f(float x) { return Horner<3>::eval(x); }",
            "struct SoftmaxPlan { void exec(const float* x) const; };\nvoid SoftmaxPlan::exec(const float* x) const {}",
            "struct BlasHandle { static cublasHandle_t handle; };\ncublasHandle_t BlasHandle::handle = nullptr;",
            "void g() { LaunchSpec spec; spec.attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; }",
            'static void reg(pybind11::module& m) { m.def("f", &f, py::arg("x"), '
            "py::call_guard<py::gil_scoped_release>()); }",
        ],
        ['auto r = py::eval("1 + 1");', 'pybind11::exec("import os");', "py::object o = py::none();",
         "auto g = py::globals();", 'obj.attr("__class__");', 'auto m = py::module_::import("torch");',
         "namespace p = pybind11;", "using namespace pybind11;", "using py::eval;", 'PyRun_SimpleString("x = 1");'],
        "Python interpreter",
    ),
    # 2. at::cuda helpers that are not operators (cub_temp_from_caching_allocator, at_cuda_set_current_stream,
    # aten_apply_grid_ceil_div)
    "at_cuda": (
        [
            "void g() { auto* a = at::cuda::getCUDADeviceAllocator(); }",
            "void g() { at::cuda::setCurrentCUDAStream(s); }",
            "void g() { dim3 b = at::cuda::getApplyBlock(); dim3 gr; at::cuda::getApplyGrid(n, gr, dev); "
            "auto k = at::cuda::ATenCeilDiv(n, 4); }",
        ],
        ["auto y = at::cuda::mm(a, b);", "auto y = at::cuda::add(a, b, 1);", "at::cuda::blas::gemm<float>(args);"],
        "operator implementations",
    ),
    # 3. <algorithm>'s std::remove and a container's remove (std_remove_unit_dims); the one-argument file form stays refused
    "remove": (
        ["void g() { dims.erase(std::remove(dims.begin(), dims.end(), 1), dims.end()); lst.remove(3); }"],
        ['remove("/tmp/judge/record.json");', "std::remove(path.c_str());", 'int fd = open("x", 0);'],
        "files",
    ),
    # 5. at::native's header-only device helpers (aten_native_block_reduce_rowmean); its operators stay refused
    "at_native": (
        ["__global__ void k(float* y) { float s = at::native::cuda_utils::BlockReduceSum<float>(1.f, nullptr); }",
         "bool g(const at::Tensor& t) { return at::native::canUse32BitIndexMath(t); }"],
        ["auto y = at::native::add(a, b, 1);", "auto y = at::native::softmax(a, 1, false);", "at::native::cpu_kernel(it, f);"],
        "operator implementations",
    ),
}  # fmt: skip


# 6. A function the submission defines under a libc name (device_function_named_open): its own calls pass;
# libc's, qualified or in a submission that defines no such function, stay refused (and the built object's
# imports refuse a real libc call whatever the source says: static_imports.py).
OWN_OPEN = "__device__ float open(const float* x, int i) { return x[i]; }\n"


def test_a_function_the_submission_defines_under_a_libc_name_may_be_called(tmp_path: Path) -> None:
    assert _source(tmp_path, OWN_OPEN + "__global__ void k(const float* x, float* y) { y[0] = open(x, 0); }") == []
    qualified = _source(tmp_path, OWN_OPEN + 'void h() { int fd = ::open("/tmp/x", 0); }')
    assert any("files" in f for f in qualified), qualified
    assert any("files" in f for f in _source(tmp_path, 'void h() { int fd = open("/tmp/x", 0); }'))
    system = "struct Sys { int n; };\n__device__ float system(Sys s) { return s.n; }\n"
    assert _source(tmp_path, system + "__global__ void k(float* y) { y[0] = system(Sys{1}); }") == []
    assert any("process" in f for f in _source(tmp_path, 'void h() { system("ls"); }'))


def test_metadata_queries_are_not_operator_calls() -> None:
    """`is_set_to` (an out binding's aliasing guard), `is_pinned`, `is_distributed` read metadata (is_set_to_alias_guard);
    `is_nonzero` reads a value and stays refused."""
    from cuda_agent.judge.candidate.opgate import ALLOWED_OPS
    from cuda_agent.judge.trusted.aten_calls import ALLOWED

    for name in ("is_set_to", "is_pinned", "is_distributed"):
        assert name in ALLOWED and name in ALLOWED_OPS
    assert "is_nonzero" not in ALLOWED and "is_nonzero" not in ALLOWED_OPS


@pytest.mark.parametrize("rule", list(CPP_PAIRS))
def test_honest_cpp_passes_and_the_cheat_is_still_refused(tmp_path: Path, rule: str) -> None:
    honest, cheats, reason = CPP_PAIRS[rule]
    for body in honest:
        assert _source(tmp_path, body) == [], body
    for line in cheats:
        assert any(reason in f for f in _source(tmp_path, f"void f() {{ {line} }}")), line


def test_operator_reason_lists_what_at_cuda_allows(tmp_path: Path) -> None:
    found = " ".join(_source(tmp_path, "void f() { auto y = at::cuda::mm(a, b); }"))
    assert "getCUDADeviceAllocator" in found and "c10::cuda::" in found


# 4. a created stream joined by CUDAEvent::block (stream_joined_with_event_block) or in
# another file (stream_created_in_other_file); never joined: refused.
def test_streams_joined_with_event_block_or_in_another_file_pass(tmp_path: Path) -> None:
    create = "void make(cudaStream_t* s) { cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }"
    assert _source(tmp_path, create + "\nvoid j(at::cuda::CUDAEvent& e, cudaStream_t c) { e.block(c); }") == []
    (tmp_path / "op.cu").unlink()
    (tmp_path / "join.cpp").write_text("void j(cudaEvent_t e, cudaStream_t c) { cudaStreamWaitEvent(c, e, 0); }\n")
    assert _source(tmp_path, create, name="streams.cu") == []
    (tmp_path / "join.cpp").unlink()
    assert any("never joins" in f for f in _source(tmp_path, create, name="streams.cu"))


# 5. matrix products the probe records undecomposed (bilinear_cublas, addr_cublas_ger, cdist_cublas_gemm)
# and attention, two batched products (sdpa_cublas_batched: the H200's reference ran the efficient-attention op)
@pytest.mark.parametrize("op", ["_trilinear", "addr", "_euclidean_dist", "_scaled_dot_product_efficient_attention",
                                "_scaled_dot_product_flash_attention"])
def test_tasks_with_undecomposed_products_allow_cublas(tmp_path: Path, op: str) -> None:
    assert op in GEMM_OPS
    assert _source(tmp_path, "void g() { cublasSgemm(h); }", name="g.cpp", ops={op, "view"}) == []
    # the cheat: cuBLAS doing a task's elementwise work (torch.outer reaches mul), refused naming what ran
    found = " ".join(_source(tmp_path, "void g() { cublasSger(h); }", name="g.cpp", ops={"mul", "view"}))
    assert "no matrix product" in found and "the reference ran: mul, view" in found and "addr" in found
    assert "mul" not in library_rules.GEMM_OPS  # torch.outer reaches mul: elementwise, no cuBLAS


# 6. imports that reach no PyTorch compute beyond `import torch` (import_nn_init_parameter, import_operator_itertools)
MODEL = """
import torch
import torch.nn as nn
{imports}
import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.empty(n))
{init}
    def forward(self, x):
{forward}
"""


def _model(imports: str = "", init: str = "", forward: str = "        return cuda_extension.f(x, self.w)") -> str:
    return MODEL.format(imports=imports, init=init, forward=forward)


def test_init_parameter_operator_and_itertools_imports_pass() -> None:
    imports = ("import torch.nn.init as init\nfrom torch.nn.parameter import Parameter\nimport operator\n"
               "import itertools\nfrom functools import reduce")  # fmt: skip
    init = ("        init.uniform_(self.w)\n        self.n = reduce(operator.mul, (2, 3), 1)\n"
            "        self.pairs = list(itertools.product(range(2), range(2)))\n")  # fmt: skip
    assert check_model_new(_model(imports, init)) == []
    # the cheats: getattr and state mutation by operator's names, imports beyond the list
    for imported, forward, expected in [
        ("import operator", "        return operator.attrgetter('_C')(torch)", "attrgetter"),
        ("from operator import methodcaller", "        return x", "methodcaller"),
        ("import operator", "        operator.setitem(self.cache, 0, x)\n        return x", "setitem"),
        ("import operator", "        operator.iadd(self.seen, [x])\n        return x", "iadd"),
        ("import os", "        return x", "import of os"),
        ("import torch.utils", "        return x", "allowed: __future__, collections"),
    ]:
        assert any(expected in str(f) for f in check_model_new(_model(imported, forward=forward))), expected


# 7. private attributes of the submission's own extension (private_extension_function); torch's stay refused
@pytest.mark.parametrize("source", [
    _model(forward="        return cuda_extension._col_scale_forward(x, self.w)"),
    _model(imports="import cuda_extension as ext", forward="        return ext._col_scale_forward(x, self.w)"),
])  # fmt: skip
def test_private_functions_of_the_own_extension_pass(source: str) -> None:
    assert check_model_new(source) == []
    for forward in ["        return torch.cuda._sleep(10)", "        return torch.autograd._profiler_enabled()",
                    "        cuda_extension = torch\n        return cuda_extension._foo(x)"]:  # torch's: refused
        assert any("private attribute" in str(f) for f in check_model_new(_model(forward=forward))), forward


# 8. try/except while constructing (try_except_in_init); in forward, what it calls, at import, or re-run from forward: refused
DEVICE_QUERY = ("        try:\n            self.sms = torch.cuda.get_device_properties(0).multi_processor_count\n"
                "        except RuntimeError:\n            self.sms = 132\n")  # fmt: skip


REACHABLE_TRIES = [
    _model(forward="        try:\n            return cuda_extension.f(x, self.w)\n        except RuntimeError:\n"
                   "            return torch.relu(x)"),
    _model(init="        def fallback(x):\n            try:\n                return cuda_extension.f(x)\n"
                "            except RuntimeError:\n                return x\n        self.fallback = fallback\n"),
    _model(init=DEVICE_QUERY, forward="        return ModelNew(4).sms"),
    _model(init=DEVICE_QUERY, forward="        return type(self)(4).sms"),
    _model(init=DEVICE_QUERY, forward="        self.__init__(4)\n        return x"),
    "import torch\ntry:\n    import cuda_extension\nexcept ImportError:\n    cuda_extension = None\n",
]  # fmt: skip


def test_try_except_directly_in_init_passes_and_one_forward_can_reach_is_refused() -> None:
    assert check_model_new(_model(init=DEVICE_QUERY)) == []
    for source in REACHABLE_TRIES:
        assert any("try/except" in str(f) for f in check_model_new(source)), source


# 9. rules the honest probe met without SKILL.md stating them (L2 persistence, getenv): kept, stated
def test_l2_persistence_and_environment_rules_are_stated_with_what_to_do(tmp_path: Path) -> None:
    skill = SKILL.read_text()
    assert "getenv" in skill and "accessPolicyWindow" in skill and "cudaDeviceSetLimit" in skill
    l2 = " ".join(_source(tmp_path, "void g() { cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, n); }"))
    assert "L2 flush" in l2 and "shared memory" in l2
    env = " ".join(_source(tmp_path, 'void g() { auto* v = std::getenv("DEBUG"); }'))
    assert "environment" in env and "arguments of your extension function" in env


# 10. kernels in a namespace starting with cublas/cudnn (a probe's `cublas_linear`): kept (cuDNN's run-time kernels are named
# cudnn_generated_*, so a prefix cannot be narrowed to a namespace), stated with the rename
def test_reserved_kernel_prefixes_are_stated() -> None:
    from cuda_agent.judge.trusted.device_code import RESERVED_KERNEL_PREFIXES

    skill = SKILL.read_text()
    assert all(f"`{p}`" in skill for p in RESERVED_KERNEL_PREFIXES) and "cublas_linear" in skill
