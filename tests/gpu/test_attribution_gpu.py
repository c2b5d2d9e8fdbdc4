"""GPU: the kernel names the judge reads from the built binary are exactly the names the profiler reports for
the kernels that run (the assumption binary attribution rests on), and copies are reported as copies."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from cuda_agent.judge.decide.coverage import COPY_ACTIVITY, binary_attribution, coverage_report, normalise
from cuda_agent.judge.decide.coverage_stage import judge_kernel_lists
from cuda_agent.judge.trusted.build import BuildConfig, build_extension

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.gpu


def _load(case: str, tmp_path: Path):
    """Build a case's extension and import it under a name of this test's own: a second plain
    `import cuda_extension` in one process hands back the first module (CPython keeps single-phase
    extension modules by name), so a later test would silently call an earlier case's kernels."""
    result = build_extension(ROOT / case / "kernels", tmp_path / "build", BuildConfig(arch="9.0"))
    assert result.ok, result.log
    spec = importlib.util.spec_from_file_location(f"{tmp_path.name}.cuda_extension", result.module_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert Path(module.__file__) == result.module_path
    return module, result.module_path


def test_profiled_kernel_names_match_the_binary(tmp_path: Path) -> None:
    import torch

    from cuda_agent.judge.candidate.kernel_trace import traced

    module, path = _load("tests/adversarial/00_honest_macro_kernel_name", tmp_path)
    names, reserved = binary_attribution(path)
    assert not reserved
    x = torch.randn(1024, 1024, device="cuda")
    _, ran = traced(lambda: module.ew_forward(x, 1.5, 0.25, -0.1, 2.0))
    print("binary:", sorted(names), "\nprofiler:", ran)
    assert any(normalise(k) in names for k in ran), (ran, names)
    lists = judge_kernel_lists((), None, False)
    report = coverage_report(ran, names, {"gelu"}, lists=lists)
    assert report.share == 1.0 and report.submitted_us > 0, report.summary()
    # ATen's kernels are foreign, however they were launched
    _, aten = traced(lambda: torch.nn.functional.gelu(x * 1.5 + 0.25))
    assert coverage_report(aten, names, {"gelu"}, lists=lists).share == 0.0


def test_pitched_copies_are_reported_as_copies(tmp_path: Path) -> None:
    import torch

    from cuda_agent.judge.candidate.kernel_trace import traced

    module, path = _load("tests/adversarial/00_honest_memcpy2d_concat", tmp_path)
    a, b = torch.randn(256, 128, device="cuda"), torch.randn(256, 128, device="cuda")
    out, ran = traced(lambda: module.concat_forward(a, b))
    assert torch.equal(out, torch.cat([a, b], dim=1))
    print("profiler:", ran)
    assert ran and all(COPY_ACTIVITY.match(k) for k in ran), ran
    report = coverage_report(ran, binary_attribution(path)[0], {"cat"}, lists=judge_kernel_lists((), None, False))
    assert report.share == 1.0 and report.copies_us > 0


def test_tracing_inside_the_op_gate_records_no_op(tmp_path: Path) -> None:
    """The candidate worker traces forward inside the op gate: the profiler itself must dispatch nothing."""
    import torch

    from cuda_agent.judge.candidate.kernel_trace import traced
    from cuda_agent.judge.candidate.opgate import OpGate

    module, _ = _load("tests/adversarial/00_honest_inc_kernel_body", tmp_path)
    x = torch.randn(4096, 256, device="cuda")
    gate = OpGate(poison=True)
    with torch.no_grad(), gate:
        y, ran = traced(lambda: module.ew_forward(x, 1.5, 0.25, -0.1, 2.0))
    assert not gate.forbidden, gate.report()
    expected = torch.clamp(torch.nn.functional.gelu(x * 1.5 + 0.25), -0.1, 2.0)
    torch.testing.assert_close(y, expected, atol=1e-5, rtol=1e-5)
    assert ran
