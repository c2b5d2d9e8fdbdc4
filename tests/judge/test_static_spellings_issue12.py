"""Spellings the issue-12 adversarial cases found past the static checks (tests/adversarial, third session),
each refused now with a reason, and the binary-level rule behind two of them: C++ that calls PyTorch
operators imports `at::_ops::<op>::call`, whatever the source spelled or the dispatch keys it excluded."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.judge.candidate.opgate import ALLOWED_OPS
from cuda_agent.judge.trusted import aten_calls
from cuda_agent.judge.trusted.driver_gate import LINKED_MODULE
from cuda_agent.judge.trusted.static_checks import check_imports, check_kernel_sources, check_model_new

HEAD = "import functools\nimport torch\nimport torch.nn as nn\nimport cuda_extension\n"
MODEL = "class ModelNew(nn.Module):\n    def forward(self, x):\n{body}\n"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("functools.update_wrapper(torch.cuda.Event, object, assigned=('elapsed_time',), updated=())\n", "update_wrapper"),
        ("from functools import update_wrapper\n", "update_wrapper"),
        ("t = torch.from_file('/tmp/x', shared=True, size=4)\n", "from_file"),
        ("class Q:\n    def __exit__(self, *a):\n        return True\n", "__exit__"),
        (MODEL.format(body="        return x if torch.initial_seed() else x"), "initial_seed"),
        (MODEL.format(body="        n = next(self.calls)\n        return x"), "iterator"),
        (MODEL.format(body="        cache = self.cache\n        cache[1] = x\n        return x"), "state"),
        (MODEL.format(body="        cache = self.cache\n        cache.clear()\n        return x"), "state"),
    ],
)  # fmt: skip
def test_issue12_python_spellings_are_refused(source: str, expected: str) -> None:
    findings = check_model_new(HEAD + source)
    assert any(expected in str(f) for f in findings), findings


def test_locals_made_in_forward_may_still_be_used_freely() -> None:
    body = "        parts = []\n        parts.append(x)\n        w = self.weight\n        y = cuda_extension.f(x, w)\n        return y"
    assert check_model_new(HEAD + MODEL.format(body=body)) == []


# Mangled symbols as the built objects of 02_linked_cublas_aten_mm_cpp and 02_aten_header_decoy_softmax_cpp
# import them (g++, torch 2.14), and the allocation/view entry points honest bindings import.
MM = "_ZN2at4_ops2mm4callERKNS_6TensorES4_"
SOFTMAX = "_ZN2at4_ops8_softmax4callERKNS_6TensorElb"
T = "_ZN2at4_ops1t4callERKNS_6TensorE"
EMPTY = "_ZN2at4_ops19empty_memory_format4callEN3c108ArrayRefINS2_6SymIntEEE"
EMPTY_LIKE = "_ZN2at4_ops10empty_like4callERKNS_6TensorE"


def test_aten_operators_called_from_cpp_are_read_from_the_symbols() -> None:
    assert aten_calls.forbidden_operators({MM, T, EMPTY}) == ["mm"]
    assert aten_calls.forbidden_operators({SOFTMAX, EMPTY_LIKE}) == ["_softmax"]
    assert aten_calls.forbidden_operators({EMPTY, EMPTY_LIKE, T, "cudaLaunchKernel"}) == []
    assert aten_calls.forbidden_operators({"_ZN3c1010Dispatcher13realSingletonEv"}) == ["the dispatcher"]
    findings = check_imports(
        {"kernels/mm_relu_binding.cpp": {MM, T, EMPTY, "cublasSetStream_v2"}}, {"addmm", "relu"}
    )
    assert any("aten.mm" in str(f) for f in findings), findings
    assert check_imports({"kernels/ok_binding.cpp": {EMPTY, EMPTY_LIKE, "cudaLaunchKernel"}}, {"relu"}) == []


@pytest.mark.parametrize(
    ("struct", "allowed"),
    [("fill__Scalar", True), ("transpose_int", True), ("select_int", True), ("empty_strided", True),
     ("squeeze_copy_dim", False), ("view_copy", False), ("select_scatter", False), ("unfold_backward", False),
     ("t_", False), ("addmm", False), ("sum_dim_IntList", False)],
)  # fmt: skip
def test_overloads_of_allowed_ops_are_allowed_and_look_alikes_are_not(struct: str, allowed: bool) -> None:
    assert aten_calls.is_allowed(struct) is allowed


def test_allowed_operators_are_the_op_gates() -> None:
    assert aten_calls.ALLOWED == ALLOWED_OPS


@pytest.mark.parametrize(
    ("line", "expected"),
    [("pid_t p = _Fork();", "starts a process"), ("fexecve(fd, argv, envp);", "starts a process"),
     ("int fd = __open_2(\"/sys/fs/cgroup/cgroup.procs\", 1);", "opens or changes files"),
     # Since issue 33 the name is judged, not the call: the judge's gate refuses cuCtxCreate at run time,
     # and the literal gives the reason before anything runs.
     ("cudaGetDriverEntryPoint(\"cuCtxCreate\", &fn, 0, nullptr);", "driver function cuCtxCreate")],
)  # fmt: skip
def test_issue12_cpp_spellings_are_refused(tmp_path: Path, line: str, expected: str) -> None:
    (tmp_path / "daemon_binding.cpp").write_text(f"#include <unistd.h>\nvoid f() {{\n    {line}\n}}\n")
    findings = check_kernel_sources(tmp_path, preprocess=False)
    assert any(expected in str(f) for f in findings), findings


def test_issue12_cpp_spellings_are_refused_by_what_the_linker_binds() -> None:
    found = str(check_imports({"kernels/daemon_binding.cpp": {"_Fork", "fexecve", "__open_2", "setsid"}}))
    assert "_Fork" in found and "fexecve" in found and "__open_2" in found
    # Since issue 33: an object may import the entry-point call (it binds to the judge's gate); a driver
    # function it imports directly must be on the allow-list, and the linked extension must import none of
    # the gated names (or a call got past the gate).
    assert check_imports({"kernels/tma.cu": {"cudaGetDriverEntryPointByVersion"}}) == []
    assert "driver API" in str(check_imports({"kernels/ctx.cpp": {"cuCtxCreate_v2"}}))
    assert "driver gate" in str(check_imports({LINKED_MODULE: {"cudaGetDriverEntryPointByVersion@libcudart.so.13"}}))
