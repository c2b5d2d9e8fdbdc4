"""The episode's reward: the judge's verdict on the final workspace.

`Judge` is the seam (RL code may judge on a remote pool instead); `LocalJudge` calls the judge in this
process. A judge that cannot run here (no CUDA GPU) is not a failed episode: the outcome is recorded as
`unavailable` with the judge's reason and no reward, and the trajectory keeps the last build result
from the agent's own compiles.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cuda_agent.task import Task

UNAVAILABLE = "unavailable"
JUDGE_ERROR = "judge_error"


@dataclass(frozen=True)
class JudgeOutcome:
    """`status` is the verdict's status, or `unavailable` / `judge_error` when there is no verdict."""

    status: str
    reward: int | None
    reason: str
    verdict: dict[str, Any] | None = field(default=None)
    # How the judgment held its GPU (cuda_agent.gpu_lease: mode, gpus, waited_s, held_s), when it did.
    gpu_lease: dict[str, Any] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        out = {"status": self.status, "reward": self.reward, "reason": self.reason, "verdict": self.verdict}
        return out if self.gpu_lease is None else {**out, "gpu_lease": self.gpu_lease}


class Judge(Protocol):
    def __call__(self, workspace: Path, task: Task) -> JudgeOutcome: ...


class LocalJudge:
    """Judges in this process. `lock` serialises judgments of concurrent episodes, and the GPU lease
    (cuda_agent.gpu_lease, exclusive) keeps every episode's tool commands, in any process, off the GPU
    meanwhile: timings taken while other kernels share the GPU would be noise."""

    def __init__(self, config: Any = None, lock: threading.Lock | None = None) -> None:
        self.config = config
        self.lock = lock or threading.Lock()

    def __call__(self, workspace: Path, task: Task) -> JudgeOutcome:
        from cuda_agent.judge import judge

        with self.lock:
            return judged_here(lambda: judge(workspace, task=task, config=self.config),
                               what=f"the final judgment of {task.name}")  # fmt: skip


class ServiceJudge:
    """The `Judge` seam over one `JudgeService` of this host, started on first use and kept warm (the
    verl agent loop's and TRL GRPO's local judge). Thread-safe: the service's own lanes serialise GPU
    stages per GPU, so concurrent rollouts may call it at once.

    Each judgment holds its GPU alone (cuda_agent.gpu_lease), so no rollout's tool command, in this process
    or another, runs on it while a kernel is timed; a caller that already holds it in this thread (GRPO's
    environment, which logs the wait) keeps its hold, nothing is taken twice. `close()` stops every worker
    the service started."""

    def __init__(self, config: Any = None) -> None:
        self.config = config
        self._service: Any = None
        self._lock = threading.Lock()

    def _get(self) -> Any:
        with self._lock:
            if self._service is None:
                from cuda_agent.judge import JudgeService

                service = JudgeService(self.config, keep_warm=True)
                try:
                    service.start()
                except BaseException:
                    service.close()
                    raise
                self._service = service
            return self._service

    def __call__(self, workspace: Path, task: Task) -> JudgeOutcome:
        return judged_here(lambda: self._get().judge(Path(workspace), task),
                           what=f"the judgment of a rollout on {task.name}")  # fmt: skip

    def close(self) -> None:
        with self._lock:
            service, self._service = self._service, None
        if service is not None:
            service.close()


def judged_here(judge_call: Callable[[], Any], what: str) -> JudgeOutcome:
    """The outcome of `judge_call()` (a Verdict from a judge on this host's GPU), run holding the GPU
    exclusively (cuda_agent.gpu_lease; a hold this thread already has is kept, not taken again); every
    failure becomes an outcome with its reason, never an exception: a judge that cannot run here is
    `unavailable`, a GPU that never comes free or a judge that raises is `judge_error`."""
    from cuda_agent.gpu_lease import LeaseError, judgment
    from cuda_agent.judge import JudgeUnavailable

    try:
        with judgment(what=what) as lease:
            verdict = judge_call()
            held = lease.to_dict()
    except JudgeUnavailable as e:
        return JudgeOutcome(UNAVAILABLE, None, str(e))
    except LeaseError as e:  # the GPU never came free: no verdict, said why
        return JudgeOutcome(JUDGE_ERROR, None, str(e))
    except Exception as e:  # the judge failing is recorded, never a lost episode
        return JudgeOutcome(JUDGE_ERROR, None, f"{type(e).__name__}: {e}")
    lease_note = held if held["gpus"] else None
    return JudgeOutcome(verdict.status.value, verdict.reward, verdict.reason, verdict.to_dict(), lease_note)


def no_judge(workspace: Path, task: Task) -> JudgeOutcome:
    """For runs that only collect trajectories: no verdict, no reward."""
    return JudgeOutcome("skipped", None, "judging was turned off for this run")
