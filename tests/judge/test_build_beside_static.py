"""The static source rules run beside the build (decide/build_stage.py): a finding still decides the
verdict and cancels the compilers at once, so overlapping them never makes a refusal wait for a build."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

from cuda_agent.judge.common.procs import run_limited
from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.judgment import Judgment
from cuda_agent.judge.decide.verdict import Status
from cuda_agent.judge.trusted.build import CANCELLED, BuildConfig, build_extension
from cuda_agent.task import load_task

EXAMPLES = Path(__file__).parents[2] / "examples"


def test_run_limited_stops_when_cancelled_and_keeps_its_input() -> None:
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    began = time.monotonic()
    done = run_limited(["sleep", "30"], timeout=20, cancel=cancel)
    assert time.monotonic() - began < 5
    assert done.returncode == -9 and not done.timed_out
    echoed = run_limited(["cat"], timeout=10, cancel=threading.Event(), stdin_text="in\n")
    assert echoed.returncode == 0 and echoed.stdout == "in\n"
    late = run_limited(["sleep", "5"], timeout=0.3, cancel=threading.Event())
    assert late.timed_out


def test_a_cancelled_build_compiles_nothing_and_caches_nothing(tmp_path: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    cache = tmp_path / "objects"
    result = build_extension(EXAMPLES / "row_softmax" / "kernels", tmp_path / "out",
                             BuildConfig(cache_dir=cache, precompiled_header=False), cancel=cancel)  # fmt: skip
    assert not result.ok and result.log == CANCELLED
    assert not list(cache.glob("*.o"))


def test_a_static_finding_ends_a_hanging_build_at_once(tmp_path: Path) -> None:
    """build_hang's constexpr search runs past any time limit; with a forbidden call beside it the
    judgment is refused for the call as soon as the preprocessor has seen it, not after the build limit."""
    submission = tmp_path / "build_hang"
    shutil.copytree(EXAMPLES / "build_hang", submission)
    (submission / "kernels" / "spawn.cpp").write_text('#include <cstdlib>\nint run() { return std::system("id"); }\n')
    # No PCH: a cancelled build leaves the shared PCH compiling in the background, which would hold this
    # test process open at exit (the PCH wait itself is cancelled the same way as a compile).
    build = BuildConfig(cache_dir=tmp_path / "objects", compile_timeout_s=120, total_timeout_s=150,
                        precompiled_header=False)  # fmt: skip
    judgment = Judgment(submission, load_task(submission / "model.py"),
                        JudgeConfig(scratch_dir=tmp_path / "scratch", build=build))  # fmt: skip
    began = time.monotonic()
    try:
        verdict = judgment.build_only()
    finally:
        judgment.cleanup()
    took = time.monotonic() - began
    assert verdict is not None and verdict.status == Status.REJECTED, verdict
    assert "spawn.cpp" in verdict.reason and "static checks failed" in verdict.reason
    assert took < 60, f"the refusal waited {took:.0f} s for the build"


def test_model_new_and_kernel_findings_are_named_together(tmp_path: Path) -> None:
    """As before the overlap: one reason lists the findings of model_new.py and of kernels/ alike."""
    submission = tmp_path / "both"
    shutil.copytree(EXAMPLES / "row_softmax", submission)
    model_new = submission / "model_new.py"
    model_new.write_text("import os\n" + model_new.read_text())
    (submission / "kernels" / "spawn.cpp").write_text('#include <cstdlib>\nint run() { return std::system("id"); }\n')
    build = BuildConfig(cache_dir=tmp_path / "objects", precompiled_header=False)
    judgment = Judgment(submission, load_task(submission / "model.py"),
                        JudgeConfig(scratch_dir=tmp_path / "scratch", build=build))  # fmt: skip
    try:
        verdict = judgment.build_only()
    finally:
        judgment.cleanup()
    assert verdict is not None and verdict.status == Status.REJECTED, verdict
    assert "import of os" in verdict.reason and "spawn.cpp" in verdict.reason, verdict.reason
