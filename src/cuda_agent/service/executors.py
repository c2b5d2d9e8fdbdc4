"""Where the server's judgments run. An executor takes jobs (a folder laid out from the stored
submission, and its task) and reports one outcome per job; the job queue (jobs.py) does the rest.

- `LocalExecutor`: the host's GPUs through one `JudgeService`, fed as a stream to `judge_many`, so
  builds run in parallel on the CPU while each GPU lane verifies and times one judgment at a time, exactly
  as `cuda-agent judge` does with a batch.
- `BuildOnlyExecutor`: the checks a CPU can make (task, static checks, build: `judge --build-only`),
  for servers without a GPU and for the CPU tests.
- `RayExecutor` (ray_pool.py): builds on the cluster's CPUs, GPU stages on one actor per GPU.

An outcome is the `JudgeOutcome` dict of agent/judging.py: status, reward, reason and the verdict. An
executor calls `began(id)` when a judge actually starts on a job (not when it is queued with the
executor), so the store shows the real state and counts an attempt only for a judgment that ran.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cuda_agent.agent.judging import JUDGE_ERROR
from cuda_agent.judge import JudgeConfig, Verdict
from cuda_agent.service.submission import Submission
from cuda_agent.task import Task

Report = Callable[[str, dict[str, Any]], None]
Began = Callable[[str], bool]  # a judge starts on this job now; False: it has a verdict already, skip it


def began_always(judgment_id: str) -> bool:
    return True


@dataclass(frozen=True)
class Job:
    id: str
    folder: Path  # the submission laid out on this host (model.py = the task)
    task: Task | None  # None: model.py does not load, and the judge reports that as its verdict
    submission: Submission
    attempt: int


def outcome_of(verdict: Verdict) -> dict[str, Any]:
    return {"status": verdict.status.value, "reward": verdict.reward, "reason": verdict.reason,
            "verdict": json.loads(verdict.to_json())}  # fmt: skip


def judge_error(reason: str) -> dict[str, Any]:
    """No verdict could be reached (the judge, not the submission, failed): no reward either way."""
    return {"status": JUDGE_ERROR, "reward": None, "reason": reason, "verdict": None}


class Executor(Protocol):
    lanes: int

    def start(self, report: Report, began: Began = began_always) -> None: ...

    def submit(self, job: Job) -> None: ...

    def busy(self) -> int: ...

    def close(self) -> None: ...


class BuildOnlyExecutor:
    """CPU checks only (`judge --build-only`); `workers` judgments at a time."""

    def __init__(self, config: JudgeConfig | None = None, workers: int = 1) -> None:
        self.config = config or JudgeConfig()
        self.lanes = workers
        self._running = 0
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="judge-cpu")

    def start(self, report: Report, began: Began = began_always) -> None:
        self._report, self._began = report, began

    def submit(self, job: Job) -> None:
        self._pool.submit(self._run, job)

    def _run(self, job: Job) -> None:
        from cuda_agent.judge import check_on_cpu

        if not self._began(job.id):
            return
        with self._lock:
            self._running += 1
        try:
            verdict, _ = check_on_cpu(job.folder, job.task, self.config)
            outcome = outcome_of(verdict)
        except Exception as exc:  # the checks never raise for a bad submission: this is the judge's fault
            outcome = judge_error(f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._running -= 1
        self._report(job.id, outcome)

    def busy(self) -> int:
        return self._running

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class LocalExecutor:
    """The host's GPUs (`devices`, default the first) through one long-lived `JudgeService`."""

    def __init__(self, config: JudgeConfig | None = None, devices: list[int] | None = None,
                 build_workers: int | None = None) -> None:  # fmt: skip
        from cuda_agent.judge import JudgeService

        self.service = JudgeService(config, devices=devices, build_workers=build_workers, keep_warm=True)
        self.lanes = len(self.service.pools)
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._order: list[str] = []  # judge_many's index -> job id
        # Jobs handed to judge_many at once: what it builds and holds for the GPU lanes (its own bound).
        # The rest wait here, `queued`: a judgment starts (`began`) when judge_many takes it.
        self._window = threading.Semaphore(self.service.build_workers + 2 * self.lanes)

    def start(self, report: Report, began: Began = began_always) -> None:
        self._report, self._began = report, began
        self.service.start()  # JudgeUnavailable here (no GPU) stops the server before it listens
        self._thread = threading.Thread(target=self._consume, name="judge-stream", daemon=True)
        self._thread.start()

    def _stream(self) -> Iterator[tuple[Path, Task]]:
        while True:
            self._window.acquire()
            job = self._jobs.get()
            if job is None:
                return
            if not self._began(job.id):
                self._window.release()
                continue
            self._order.append(job.id)
            yield job.folder, job.task

    def _consume(self) -> None:
        try:
            for index, verdict in self.service.judge_many(self._stream()):
                self._window.release()
                self._report(self._order[index], outcome_of(verdict))
        except Exception as exc:  # the stream broke: what is still queued comes back after a restart
            import sys

            print(f"judge stream stopped: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    def submit(self, job: Job) -> None:
        self._jobs.put(job)

    def busy(self) -> int:
        return self.service.lanes_busy

    def close(self) -> None:
        self._jobs.put(None)
        self.service.close()
