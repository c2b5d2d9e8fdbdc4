"""Everything a judgment checks that needs no GPU: the task, the static checks and the build.

`judge --build-only` and the workspace's `utils/compile.sh` call `check_on_cpu`, so "it builds" on a CPU
means what it means to the judge: the task (DIR/model.py or `--task`) loads and runs on the meta device,
`model_new.py` and `kernels/` pass the judge's static checks (`static_checks.py`, as the judge applies
them, including the cuBLAS/cuDNN rules, which need the ops the reference runs), `ModelNew.forward` can
reach `cuda_extension` at all (`forward_calls.py`: the op gate that refuses plain PyTorch needs a GPU),
and `kernels/` builds with the judge's own build. All three run (the task probe beside the build), so one call reports every problem;
the verdict names the first failing stage in judgment order and has the same JSON schema as a full
judgment, with the GPU stages marked `skipped`. Status `built` (reward 0) when everything passed.

Trust boundary: runs in the caller's process (the parent) and in compiler and probe children; no candidate
code runs. Facts it establishes for a build-only verdict: the task loads, the static checks pass, the
extension builds. The GPU judgment establishes them again itself; this is never the reward's only line.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_agent.judge.common.procs import GIB, Limits, run_limited, scrubbed_env
from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.verdict import FAILED, PASSED, SKIPPED, STAGES, Status, Verdict
from cuda_agent.judge.trusted.build import BuildResult, build_extension
from cuda_agent.judge.trusted.forward_calls import forward_never_calls_extension
from cuda_agent.judge.trusted.python_syntax import SyntaxProblem, syntax_problem
from cuda_agent.judge.trusted.static_checks import check_imports, check_kernel_sources, check_model_new
from cuda_agent.judge.trusted.static_checks import describe as describe_findings
from cuda_agent.task import Task, TaskError, load_task

GPU_STAGES = ("reference", "verify", "timing")
TASK_PROBE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class TaskCheck:
    ok: bool
    reason: str = ""
    ops: frozenset[str] | None = None  # ATen ops of the reference's forward; None when unknown
    details: dict[str, Any] | None = None


def probe_task(task: Task, timeout_s: float = TASK_PROBE_TIMEOUT_S) -> TaskCheck:
    """Run the task on the meta device in a child process (`task_probe`), bounded in time and memory."""
    with tempfile.TemporaryDirectory(prefix="cuda-agent-task-") as folder:
        path = Path(folder) / "model.py"
        path.write_text(task.source, encoding="utf-8")
        env = scrubbed_env({"CUDA_VISIBLE_DEVICES": "", "TMPDIR": folder}, keep=("PYTHONPATH",))
        done = run_limited(
            [sys.executable, "-m", "cuda_agent.judge.trusted.task_probe", str(path)],
            cwd=Path(folder), env=env, timeout=timeout_s,
            limits=Limits(address_space_bytes=16 * GIB, cpu_seconds=int(timeout_s) + 5),
        )  # fmt: skip
    if done.timed_out:
        return TaskCheck(False, f"task {task.name}: running it on the meta device took over {timeout_s:.0f} s")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    try:
        reply = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        reply = None
    if not isinstance(reply, dict) or done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:500]
        how = done.signal_name or f"exit {done.returncode}"
        return TaskCheck(False, f"task {task.name}: checking it crashed ({how}): {tail}")
    if not reply.get("ok"):
        return TaskCheck(False, str(reply.get("error", "the task is not usable")))
    details = {"meta_run": reply.get("meta"), "outputs": reply.get("outputs", [])}
    if reply.get("note"):
        details["note"] = reply["note"]
    ops = reply.get("ops")
    return TaskCheck(True, "", frozenset(ops) if ops is not None else None, details)


def check_on_cpu(
    submission: Path,
    task: Task | None = None,
    config: JudgeConfig | None = None,
    out_dir: Path | None = None,
) -> tuple[Verdict, BuildResult | None]:
    """Check `submission` (model_new.py + kernels/) against `task` (default: its model.py) without a GPU.

    Builds into `out_dir` (a temporary folder when None, removed afterwards: then the returned build
    result's module is gone). Never raises for a bad submission or task."""
    config = config or JudgeConfig()
    submission = Path(submission)
    start = time.monotonic()
    seconds: dict[str, float] = {}
    checks: dict[str, Any] = {}
    reasons: dict[str, str] = {}

    task_error = ""
    if task is None:
        try:
            task = load_task(submission / "model.py")
        except TaskError as exc:
            task_error = str(exc)

    def task_stage() -> TaskCheck:
        began = time.monotonic()
        try:
            return probe_task(task) if task is not None else TaskCheck(False, task_error)
        finally:
            seconds["task"] = time.monotonic() - began

    def build_stage(folder: Path) -> BuildResult:
        began = time.monotonic()
        try:
            return build_extension(submission / "kernels", folder, config.build)
        finally:
            seconds["build"] = time.monotonic() - began

    syntax = _syntax(submission)
    with tempfile.TemporaryDirectory(prefix="cuda-agent-build-") as scratch, ThreadPoolExecutor(2) as pool:
        probed = pool.submit(task_stage)
        built = pool.submit(build_stage, Path(out_dir) if out_dir else Path(scratch))
        static = _static_findings(submission, parsed=syntax is None)  # cheap: meanwhile
        task_check, result = probed.result(), built.result()
        ops = set(task_check.ops) if task_check.ops is not None else None
        if result.ok and result.module_path is not None:  # before a temporary build folder goes
            static += _binary_findings(result, ops)

    outcomes = {stage: SKIPPED for stage in STAGES}
    outcomes["task"] = PASSED if task_check.ok else FAILED
    if task_check.ok:
        checks["task"] = task_check.details or {}
    else:
        reasons["task"] = task_check.reason
    if ops is not None and (submission / "kernels").is_dir():
        static += check_kernel_sources(submission / "kernels", ops)  # cuBLAS/cuDNN rules
    static = list(dict.fromkeys(static))
    outcomes["static"] = FAILED if static else PASSED
    checks["static"] = [str(f) for f in static] if static else "passed"
    if static:
        reasons["static"] = f"static checks failed: {describe_findings(static)}"
    # model_new.py that Python cannot compile is part of the build failing (python_syntax.py), and comes
    # first: its static checks could not run, so the stage that failed is the build, not the rules.
    outcomes["build"] = PASSED if result.ok and syntax is None else FAILED
    checks["build"] = {**result.record(), "pch": result.pch}
    seconds.update({f"build_{step}": s for step, s in result.step_seconds.items()})  # as in a full judgment
    build_reasons = [syntax.reason] if syntax else []
    if not result.ok:
        first = next((ln for ln in result.log.splitlines() if "error" in ln.lower()), result.log[:300])
        build_reasons.append(f"build failed: {first.strip()}")
    if build_reasons:
        reasons["build"] = "; ".join(build_reasons)
    compile_log = "\n".join(log for log in (syntax.log if syntax else "", result.log) if log)
    checks["skipped"] = "reference, verify and timing need a GPU: not run (CPU checks only)"

    order = ("task", "build", "static") if syntax else ("task", "static", "build")
    failed = [stage for stage in order if outcomes[stage] == FAILED]
    if not failed:
        status, reward = Status.BUILT, 0
        reason = "CPU checks passed (task, static checks, build); verification and timing need a GPU"
    else:
        status = {"task": Status.TASK_ERROR, "static": Status.REJECTED, "build": Status.COMPILE_ERROR}[failed[0]]
        if failed[0] == "build" and result.timed_out and syntax is None:
            status = Status.TIMEOUT
        reward = -1
        reason = "; ".join(reasons[stage] for stage in failed)
        checks["failures"] = {stage: reasons[stage] for stage in failed}
    verdict = Verdict(
        reward=reward, status=status, reason=reason, compile_log=compile_log, timing=None, environment=None,
        tolerance={"atol": config.atol, "rtol": config.rtol}, checks=checks,
        stage_seconds={k: round(v, 3) for k, v in {**seconds, "total": time.monotonic() - start}.items()},
        task=task.name if task is not None else submission.name, stages=outcomes,
    )  # fmt: skip
    return verdict, result


def _binary_findings(result: BuildResult, ops: set[str] | None) -> list:
    """The judge's checks of the built library: what the linker binds, kernels in reserved namespaces."""
    from cuda_agent.judge.decide.coverage import binary_attribution
    from cuda_agent.judge.decide.coverage_stage import judge_kernel_lists
    from cuda_agent.judge.trusted.static_checks import Finding

    findings = check_imports(result.imports, ops)
    assert result.module_path is not None
    try:
        _, reserved = binary_attribution(result.module_path, judge_kernel_lists((), None, None).torch)
    except Exception as exc:  # fail closed, as the judge does
        return [*findings, Finding("kernels/", 0, f"the built library could not be read ({type(exc).__name__}: {exc})")]
    if reserved:
        from cuda_agent.judge.trusted.device_code import reserved_reason

        findings.append(Finding("kernels/", 0, reserved_reason(reserved)))
    return findings


def _syntax(submission: Path) -> SyntaxProblem | None:
    model_new = submission / "model_new.py"
    return syntax_problem(model_new.read_text(errors="replace")) if model_new.is_file() else None


def _static_findings(submission: Path, parsed: bool = True) -> list:
    """The judge's static checks of model_new.py (when it `parsed`) and kernels/ (the rules that need no
    reference)."""
    from cuda_agent.judge.trusted.static_checks import Finding

    model_new = submission / "model_new.py"
    if not model_new.is_file():
        return [Finding("model_new.py", 0, "missing: write class ModelNew in model_new.py")]
    source = model_new.read_text(errors="replace")
    findings = check_model_new(source) if parsed else []
    # What the op gate would refuse on a GPU, as far as the text shows it (the only rule of build-only's own).
    if parsed and (never := forward_never_calls_extension(source)):
        findings.append(Finding("model_new.py", *never))
    if (submission / "kernels").is_dir():
        findings += check_kernel_sources(submission / "kernels")
    return findings


def default_workers() -> int:
    """Concurrent CPU checks: half the cores (each build compiles its sources in parallel)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores // 2)
