"""The candidate worker's snapshot of torch: patches of torch's own classes and functions are named, the
judge's normal work in that process (profiler, CUDA events, loading state, lazily imported modules) is not."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_isolated(code: str) -> str:
    """In a fresh interpreter: the patches must not leak into this test process."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_normal_work_changes_nothing() -> None:
    out = run_isolated("""
        import io, torch
        from cuda_agent.judge.candidate.torch_integrity import TorchSnapshot
        snap = TorchSnapshot()
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU]):
            torch.ones(4).add_(1)
        buf = io.BytesIO(); torch.save({"w": torch.ones(2)}, buf); buf.seek(0); torch.load(buf, weights_only=True)
        import torch.nn.functional, torch.utils.data
        torch.nn.Linear(2, 2)(torch.ones(1, 2)).detach()
        print(snap.changes())
    """)
    assert out == "[]"


def test_patches_by_any_spelling_are_named_and_refused_by_the_worker() -> None:
    out = run_isolated("""
        import functools, torch
        from cuda_agent.judge.candidate.torch_integrity import TorchSnapshot
        from cuda_agent.judge.candidate.worker import CandidateWorker, RuleViolation, math_settings
        worker = CandidateWorker()
        worker.settings, worker.torch_snapshot = math_settings(), TorchSnapshot()
        worker.check_settings("loading")  # nothing changed yet: no finding
        snap = TorchSnapshot()
        class Lazy:
            def detach(self):
                return self
        functools.update_wrapper(torch.Tensor, Lazy, assigned=("detach",), updated=())
        type.__setattr__(torch.cuda.Event, "elapsed_time", lambda self, end: 0.0)
        quiet = type("Quiet", (), {"synchronize": staticmethod(lambda *a: None)})
        functools.update_wrapper(torch.cuda, quiet, assigned=("synchronize",), updated=())
        print(snap.changes())
        try:
            worker.check_settings("a timed forward")
        except RuleViolation as exc:
            print(exc)
    """)
    for name in (
        "torch.Tensor.detach",
        "torch.Tensor.__wrapped__",
        "torch.cuda.Event.elapsed_time",
        "torch.cuda.synchronize",
    ):
        assert name in out, out
    assert "a timed forward changed PyTorch itself" in out, out
