"""`Judgment`: the story of one judgment, from a submission folder to its verdict.

Runs in the judge's parent process, which never loads candidate code. Stages, each in its own module
and each ending the judgment with a verdict when it fails:
build (CPU, build_stage.py) -> reference (inputs, outputs, degeneracy audit; prepared while the build
runs, reference_stage.py) -> load the candidate into a pre-started sandboxed worker -> verify (input sets
+ a repeat, op gate, comparison by the reference worker, verify_stage.py) -> memory check -> timing
(interleaved rounds on fresh content, host-clock cross-check, timing_stage.py, timed_checks.py) ->
coverage (coverage_stage.py) -> reward (reward.py). Worker calls and their failures: calls.py.

Facts it establishes itself: the order of the stages and that every path ends in a verdict (a judge
error fails closed, `runtime_error`, never a reward), and the reward from the facts the stages gathered
(`verdict_ok`, `milestone_reward`). Workers come from a `WorkerPool` (trusted/pool.py); `JudgeService`
(service.py) keeps one alive across judgments and runs many submissions with builds in parallel and GPU
work serialised.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_agent.judge.common.channel import WorkerHandle
from cuda_agent.judge.config import JudgeConfig, JudgeUnavailable
from cuda_agent.judge.decide.build_stage import BuildStage
from cuda_agent.judge.decide.calls import WorkerCalls
from cuda_agent.judge.decide.coverage_stage import CoverageStage
from cuda_agent.judge.decide.reference_stage import ReferenceStage
from cuda_agent.judge.decide.reward import milestone_reward
from cuda_agent.judge.decide.round_size import RoundSize
from cuda_agent.judge.decide.timed_checks import TimedChecks
from cuda_agent.judge.decide.timing_stage import TimingStage
from cuda_agent.judge.decide.verdict import (
    Environment,
    Status,
    Timing,
    Verdict,
    failed_stage,
    failure,
    stage_outcomes,
)
from cuda_agent.judge.decide.verify_stage import VerifyStage
from cuda_agent.judge.trusted.lane_share import JudgeAlone, LaneShare
from cuda_agent.judge.trusted.pool import CandidateSlot, ReferenceSlot, WorkerPool, pin_current_thread
from cuda_agent.judge.trusted.static_checks import check_imports, check_kernel_sources
from cuda_agent.judge.trusted.static_checks import describe as describe_findings
from cuda_agent.task import Task


class Stop(Exception):
    """Ends a judgment early with its verdict. A verdict about the candidate says nothing against the
    reference worker, which the pool keeps (`keeps_workers`) unless a call to it failed."""

    keeps_workers = True

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict


# Verdicts that another candidate on the same GPU could have caused (its memory, its time on the GPU; a
# task found too large for the memory left): at depth 2 they are not final; the judgment is made again
# alone (trusted/lane_share.py). Wrong outputs are not among them: another process cannot reach this one's.
BESIDE_ANOTHER_STATUSES = frozenset({Status.RUNTIME_ERROR, Status.TIMEOUT, Status.TASK_ERROR})


def require_gpu() -> None:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover
        raise JudgeUnavailable(f"torch is not importable: {exc}") from exc
    if not torch.cuda.is_available():
        raise JudgeUnavailable("no CUDA GPU is visible: the judge needs one to verify and time kernels")


def scratch_root(config: JudgeConfig) -> Path:
    if config.scratch_dir:
        return config.scratch_dir
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


@dataclass
class Judgment(WorkerCalls, BuildStage, ReferenceStage, VerifyStage, TimedChecks, TimingStage, CoverageStage):
    """One judgment: its story (`run`, or `build_only` then `run_built`) and the verdict it ends in.

    The stages are mixed in from their own modules (decide/*_stage.py, timed_checks.py, calls.py); this
    class holds the order they run in, and the verdict every path ends with (`finish`, `verdict_ok`)."""

    submission: Path
    task: Task
    config: JudgeConfig
    stages: dict[str, float] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    compile_log: str = ""
    environment: Environment | None = None

    def __post_init__(self) -> None:
        root = scratch_root(self.config)
        root.mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(prefix="cuda-agent-judge-", dir=root))
        self.exits = ExitStack()
        self.built = False
        self.candidate_taken = False  # the candidate worker is this judgment's to retire (candidate_stages)
        self.started = time.monotonic()
        # Calls per timed round: samples_per_round until the reference's sizes say a round would not fit.
        self.round_plan = RoundSize(self.config.timing.samples_per_round, self.config.timing.samples_per_round)
        # Depth 2 (trusted/lane_share.py): why this judgment must be judged again alone, once it is over.
        self.alone_again = ""
        self.lane_shared = False  # its GPU part ran on a lane shared with another judgment

    # ---- the story -------------------------------------------------------------------------------
    def run(self, pool: WorkerPool) -> Verdict:
        """The whole judgment. The reference is prepared on the GPU while the build runs on the CPU."""

        def story() -> Verdict:
            with ExitStack() as held:

                def reference() -> ReferenceSlot:  # waits for a warm worker, then prepares: off the build's path
                    with self.timed("reference_wait"):
                        slot = held.enter_context(pool.reference(self.task.digest))
                    self.prepare_reference(pool, slot)
                    return slot

                with ThreadPoolExecutor(1, initializer=pin_current_thread, initargs=(pool.cpus,)) as ex:
                    prepared = ex.submit(reference)
                    try:
                        self.build()
                        taken = self.take_candidate_early(pool)  # built: no spare spent on a compile error
                    finally:
                        futures_wait([prepared])  # a build failure wins over a reference failure
                ref = prepared.result()
                return self.candidate_stages(pool, ref, taken)

        return self._guarded(story)

    def build_only(self) -> Verdict | None:
        """The CPU part alone (static checks, build): a verdict when it fails, else None."""
        try:
            self.build()
            return None
        except Stop as stop:
            return self.finish(stop.verdict)
        except Exception as exc:  # fail closed
            return self.finish(failure(Status.RUNTIME_ERROR, f"judge error ({type(exc).__name__}: {exc})"))

    def run_built(self, pool: WorkerPool) -> Verdict:
        """The GPU part of a judgment whose `build_only()` passed (the batch pipeline's GPU lane)."""

        def story() -> Verdict:
            assert self.built, "build_only() first"
            self.lane_started = time.monotonic()  # the verdict's "lane": its time on the GPU lane, all of it
            taken = self.take_candidate_early(pool)
            waited = time.monotonic()
            with pool.reference(self.task.digest) as ref:
                # A new task's reference worker is the pool's spare, which may still be warming: on the
                # lane (1.9 s at the median of 33 cold cases, H200, 2026-12-04, spares warming only while
                # the GPU is quiet).
                self.stages["reference_wait"] = time.monotonic() - waited
                share = pool.share
                if share is not None:
                    share.note_worker(id(self), ref.worker.pid)
                    share.add_reference(id(self), ref.worker)  # frozen by others' timings (preempt)
                try:
                    self.prepare_reference(pool, ref)
                    return self.candidate_stages(pool, ref, taken)
                finally:
                    if share is not None:
                        share.drop_reference(ref.worker)

        verdict = self._guarded(story)
        share = pool.share  # memory or GPU time another candidate may have taken: not this one's verdict
        if share is not None and verdict.status in BESIDE_ANOTHER_STATUSES and share.beside_another(id(self)):
            self.alone_again = self.alone_again or f"{verdict.status.value} beside another judgment: {verdict.reason[:300]}"
        return verdict

    def take_candidate_early(self, pool: WorkerPool) -> Future[CandidateSlot]:
        """Take this judgment's candidate worker now, so that waiting for it (a spare still warming) overlaps
        the reference's preparation: in a batch the lane waited for the two one after the other (0.65 s +
        0.7 s a verdict, H200, 2026-12-04). A slot the judgment ends without using is closed unused."""
        taken = pool.take_candidate_later()
        self.exits.callback(self._close_unused, pool, taken)
        return taken

    def _close_unused(self, pool: WorkerPool, taken: Future[CandidateSlot]) -> None:
        if not self.candidate_taken:
            pool.retire_later(lambda: taken.result().close())

    def candidate_stages(self, pool: WorkerPool, ref_slot: ReferenceSlot,
                         taken: Future[CandidateSlot] | None = None) -> Verdict:  # fmt: skip
        # Rules that depend on what the reference runs (cuBLAS only for a GEMM, cuDNN only for a conv).
        with self.timed("lane_checks"):
            findings = check_kernel_sources(self.submission / "kernels", self.reference_ops)
            findings += check_imports(self.imports, self.reference_ops)
        if findings:
            raise self.fail(Status.REJECTED, f"static checks failed: {describe_findings(findings)}")
        waited = time.monotonic()
        # Warmed before this candidate existed; used for it alone.
        slot = taken.result() if taken is not None else pool.take_candidate()
        self.candidate_taken = True
        slot = pool.candidate_warmed_or_again(slot)  # a spare that failed to warm is not this candidate's fault
        self.stages["worker_wait"] = time.monotonic() - waited
        # Killed when the judgment ends and torn down after the verdict is returned; the next judgment is
        # timed only once the teardown ended (pool.py: retire, settle).
        self.exits.callback(pool.retire, slot)
        if slot.warm_error:
            raise self.fail(
                Status.RUNTIME_ERROR, f"the judge could not start a candidate worker: {slot.warm_error}"
            )
        with self.timed("install"):
            self.install(slot)
        ref, cand = ref_slot.worker, slot.worker
        if pool.share is not None:
            return self.shared_gpu_part(pool, ref, cand)
        with pool.gpu_lock(self.stages, beside_retirement=True):  # not timed: see WorkerPool.retirement_fits
            self.load_candidate(cand, ref)
            self.verify(ref, cand)
            if not self.config.time_candidate:
                return self.verdict_ok(None)
            with self.timed("settle_wait"):
                pool.settle()  # no earlier candidate's teardown beside timing
            quiet = time.monotonic()
            with pool.quiet.timing():  # no worker warm-up in this process touches the GPU while timing runs
                self.stages["quiet_wait"] = time.monotonic() - quiet
                timing = self.time(ref, cand)
        return self.verdict_ok(timing)

    def shared_gpu_part(self, pool: WorkerPool, ref: WorkerHandle, cand: WorkerHandle) -> Verdict:
        """Load, verify and time at depth 2 (trusted/lane_share.py): load and verification are readers of
        the GPU beside the other judgment's; the timing is the writer, with every other candidate frozen
        and the GPU drained first. Depth 1 holds one lock from the load to the end of timing instead."""
        share = pool.share
        assert share is not None
        self.lane_shared = not share.is_alone(id(self))  # alone: device-wide readings are this judgment's
        # Frozen by others' timings from here until killed: registered before its first GPU section, which
        # a writer may freeze mid-call where the share preempts (it does not wait for it to end).
        share.add_candidate(id(self), cand.pid, self.tree_of(cand), cand)
        with pool.gpu_lock(self.stages, beside_retirement=True, reading=True, preemptible=True):
            self.load_candidate(cand, ref)
            self.verify(ref, cand)
        self.checks["lane_beside_another"] = share.beside_another(id(self))  # two in flight by now
        if share.preempt:  # its readers' time held frozen by the other's timings (a wait, not its work)
            self.stages["held_frozen"] = share.held_s(id(self))
        if not self.config.time_candidate:
            return self.verdict_ok(None)
        with pool.gpu_lock(self.stages):  # settles: no earlier candidate's teardown beside timing
            return self.verdict_ok(self._writer(pool, share, ref, cand))

    def _writer(self, pool: WorkerPool, share: LaneShare, ref: WorkerHandle, cand: WorkerHandle) -> Timing:
        """The timing as the GPU's one writer, every other candidate frozen and the GPU drained. Where the
        share preempts, a drain that fails (work the frozen judgment had queued, past its limit) is first
        answered by waiting for that judgment's section to end, as without preempt; only a second failure
        sends this judgment to be judged again alone."""
        for patient in (False, True) if share.preempt else (True,):
            quiet = time.monotonic()
            with pool.quiet.timing(every_reader=patient):
                self.stages["quiet_wait"] = self.stages.get("quiet_wait", 0.0) + time.monotonic() - quiet
                with share.others_frozen(id(self)) as others:
                    if others:
                        self.checks["lane_others_frozen"] = others
                        drained = self._reference_call(ref, "drain", 60, timeout_s=self.config.timing.drain_timeout_s)
                        if not drained.get("drained") and not patient:
                            self.checks["lane_waited_after_freeze"] = True  # then as without preempt
                            continue
                        if not drained.get("drained"):
                            raise JudgeAlone("the GPU stayed busy after the other candidate on it was frozen")
                    return self.time(ref, cand)
        raise AssertionError("unreachable: the patient pass returns or raises")

    def _guarded(self, story: Callable[[], Verdict]) -> Verdict:
        try:
            return story()
        except JudgeAlone as exc:
            self.alone_again = str(exc)
            return self.finish(failure(Status.RUNTIME_ERROR, f"to be judged again alone: {exc}"))
        except Stop as stop:
            return self.finish(stop.verdict)
        except Exception as exc:  # fail closed: a judge bug is never a reward
            return self.finish(failure(Status.RUNTIME_ERROR, f"judge error ({type(exc).__name__}: {exc})"))
        finally:
            self.exits.close()

    def finish(self, verdict: Verdict) -> Verdict:
        """Attach what every verdict carries: stage times, checks, environment, tolerance, log."""
        return Verdict(
            reward=verdict.reward,
            status=verdict.status,
            reason=verdict.reason,
            compile_log=verdict.compile_log or self.compile_log,
            timing=verdict.timing,
            environment=self.environment,
            tolerance={"atol": self.config.atol, "rtol": self.config.rtol},
            checks=dict(self.checks),
            stage_seconds={k: round(v, 3) for k, v in {**self.stages, **self._totals()}.items()},
            task=self.task.name,
            stages=stage_outcomes(
                failed_stage(verdict, self.stages, self.config.time_candidate),
                () if self.config.time_candidate else ("timing",),
            ),
        )

    @contextlib.contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Add the block's wall time to `stages[stage]` (parts inside a stage, for finding slow spots)."""
        began = time.monotonic()
        try:
            yield
        finally:
            self.stages[stage] = self.stages.get(stage, 0.0) + time.monotonic() - began

    def fail(self, status: Status, reason: str, **extra: Any) -> Stop:
        return Stop(failure(status, reason, **extra))

    def verdict_ok(self, timing: Timing | None) -> Verdict:
        reward = milestone_reward(
            True,
            timing.speedup_vs_eager_low if timing else None,
            timing.speedup_vs_compile_low if timing else None,
            eager_threshold=timing.eager_threshold if timing else None,
            compile_threshold=timing.compile_threshold if timing else None,
        )
        if timing:
            mode = timing.policy.get("compile_mode", "default")  # named where it is not torch.compile's default
            compiled = "torch.compile" if mode == "default" else f"torch.compile ({mode})"
            reason = (
                f"correct on {self.config.input_sets} input sets; {timing.candidate_ms:.4g} ms vs eager "
                f"{timing.eager_ms:.4g} ms ({timing.speedup_vs_eager:.2f}x) and {compiled} "
                f"{timing.compile_ms:.4g} ms ({timing.speedup_vs_compile:.2f}x)"
            )
        else:
            reason = f"correct on {self.config.input_sets} input sets (not timed)"
        cap = getattr(self, "precision_cap", "")
        if cap and reward > 1:  # fail closed where no truth could be made (reference_stage.no_precision_truth)
            reward, reason = 1, f"{reason}; {cap}"
        return self.finish(Verdict(reward=reward, status=Status.OK, reason=reason, timing=timing))

    def _totals(self) -> dict[str, float]:
        """"total": since the judgment was made (its build and its wait for a lane included); "lane": since
        the GPU lane took it (run_built), where that is how it ran."""
        now = time.monotonic()
        lane = getattr(self, "lane_started", None)
        return {"total": now - self.started, **({"lane": now - lane} if lane is not None else {})}

    def cleanup(self) -> None:
        self.exits.close()
        if not self.config.keep_scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


