"""Isolated worker processes for the execution filter, with per-task timeouts and restart on crash.

Each worker is a spawned process (never forked: CUDA does not survive a fork) holding one pipe to the
parent. The parent sends one job at a time per worker and waits on all pipes and process sentinels at
once. A worker that exceeds the task timeout is killed and replaced, and its task is reported as
`timeout`; one that dies (segfault, abort, OOM-kill) is replaced and its task reported as
`worker_crashed`. Other workers' tasks are unaffected. A worker that hit a CUDA error exits after
reporting, because its CUDA context may be unusable, and is replaced.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from typing import Any

from cuda_agent.synth.filters.execute import ExecConfig, ExecResult, check_task

# Set by `synth --quiet`: workers then drop library warnings and log records below errors as well.
QUIET_ENV = "CUDA_AGENT_SYNTH_QUIET"


def _worker_main(conn: Connection, cfg: ExecConfig, memory_fraction: float | None, threads: int) -> None:
    """Worker loop: receive (job_id, code), answer (job_id, ExecResult)."""
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    if os.environ.get(QUIET_ENV):
        import logging
        import warnings

        warnings.filterwarnings("ignore")
        logging.disable(logging.WARNING)
    import torch

    torch.set_num_threads(threads)
    if cfg.device.startswith("cuda"):
        torch.cuda.init()
        if memory_fraction:
            torch.cuda.set_per_process_memory_fraction(memory_fraction)
    conn.send(("ready", None))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        job_id, code = msg
        result = check_task(code, cfg)
        conn.send((job_id, result))
        text = (result.detail or "").lower()
        if "cuda error" in text or "illegal memory access" in text or "device-side assert" in text:
            return  # the CUDA context may be corrupt: let the parent start a fresh worker


@dataclass
class _Slot:
    proc: Any
    conn: Connection
    job: tuple[str, str] | None = None
    started: float = 0.0
    ready: bool = False


class WorkerPool:
    """A fixed number of isolated workers running `check_task`.

    Use `submit(job_id, code)` when `idle()` > 0, and `poll(timeout)` to collect finished
    `(job_id, ExecResult)` pairs, including timeouts and crashes. `close()` ends all workers.
    """

    def __init__(
        self,
        workers: int,
        cfg: ExecConfig,
        *,
        task_timeout_s: float = 300.0,
        memory_fraction: float | None = None,
        threads_per_worker: int = 1,
        start_timeout_s: float = 300.0,
    ) -> None:
        self.cfg = cfg
        self.n = max(1, workers)
        self.task_timeout_s = task_timeout_s
        self.start_timeout_s = start_timeout_s
        self.memory_fraction = memory_fraction
        self.threads = threads_per_worker
        self._ctx = mp.get_context("spawn")
        self._slots: list[_Slot] = [self._start() for _ in range(self.n)]
        self._pending: list[tuple[str, str]] = []
        self.restarts = 0

    def _start(self) -> _Slot:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(
            target=_worker_main, args=(child, self.cfg, self.memory_fraction, self.threads), daemon=True
        )
        # Ctrl-C reaches the whole process group. Workers are started with SIGINT ignored (an ignored signal
        # stays ignored across exec, and Python then installs no handler), so only the parent reacts: it
        # saves and stops them, instead of every worker printing its own KeyboardInterrupt traceback.
        with _sigint_ignored():
            proc.start()
        child.close()
        return _Slot(proc, parent, started=time.monotonic())

    def _replace(self, i: int) -> None:
        slot = self._slots[i]
        if slot.proc.is_alive():
            slot.proc.kill()
        slot.proc.join(timeout=10)
        slot.conn.close()
        self._slots[i] = self._start()
        self.restarts += 1

    def submit(self, job_id: str, code: str) -> None:
        """Queue a job; it is dispatched as soon as a worker is free."""
        self._pending.append((job_id, code))
        self._dispatch()

    def _dispatch(self) -> None:
        for slot in self._slots:
            if not self._pending:
                return
            if slot.ready and slot.job is None:
                slot.job = self._pending.pop(0)
                slot.started = time.monotonic()
                with contextlib.suppress(BrokenPipeError, OSError):  # a dead worker shows on the next poll
                    slot.conn.send(slot.job)

    @property
    def in_flight(self) -> int:
        return len(self._pending) + sum(1 for s in self._slots if s.job is not None)

    def idle(self) -> int:
        """How many more jobs can be submitted without queueing."""
        return max(0, self.n - self.in_flight)

    def poll(self, timeout: float = 1.0) -> Iterator[tuple[str, ExecResult]]:
        """Finished jobs, waiting at most `timeout` seconds for the first one."""
        self._dispatch()
        now = time.monotonic()
        for i, slot in enumerate(self._slots):
            limit = self.task_timeout_s if slot.ready else self.start_timeout_s
            if (slot.job is not None or not slot.ready) and now - slot.started > limit:
                job = slot.job
                self._replace(i)
                if job is not None:
                    yield job[0], _failure(job[1], "timeout", f"no answer within {limit:.0f} s", self.cfg)
        waitables: list[Any] = []
        for slot in self._slots:
            waitables += [slot.conn, slot.proc.sentinel]
        ready = wait(waitables, timeout=timeout)
        for i, slot in enumerate(self._slots):
            if slot.conn in ready:
                try:
                    job_id, result = slot.conn.recv()
                except (EOFError, OSError):
                    job_id = None
                else:
                    if job_id == "ready":
                        slot.ready = True
                        continue
                    slot.job = None
                    yield job_id, result
                    continue
            if slot.proc.sentinel in ready or not slot.proc.is_alive():
                job = slot.job
                code = slot.proc.exitcode
                self._replace(i)
                if job is not None:
                    yield (
                        job[0],
                        _failure(job[1], "worker_crashed", f"worker exited with code {code}", self.cfg),
                    )
        self._dispatch()

    def close(self) -> None:
        for slot in self._slots:
            with contextlib.suppress(BrokenPipeError, OSError):
                slot.conn.send(None)
        deadline = time.monotonic() + 5
        for slot in self._slots:
            slot.proc.join(timeout=max(0.1, deadline - time.monotonic()))
            if slot.proc.is_alive():
                slot.proc.kill()
                slot.proc.join(timeout=5)
            slot.conn.close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals are not ours to change
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _failure(code: str, reason: str, detail: str, cfg: ExecConfig) -> ExecResult:
    result = ExecResult(False, "worker", reason, detail, code, log=(("worker", f"{reason}: {detail}"),))
    return replace(result, device_name=cfg.device)
