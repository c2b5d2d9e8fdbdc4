"""The bounded queue between the HTTP front and an executor.

`submit` admits a judgment only while fewer than `max_pending` are unfinished (else `QueueFull`, which the
app answers with 429 and Retry-After): memory and scratch stay bounded however fast clients send. An
admitted judgment is committed to the store before `submit` returns, then laid out in a scratch folder
and handed to the executor. The executor's report is recorded with `Store.finish`, which keeps the first
verdict only, and wakes whoever waits for it (long polls and event streams, on the app's event loop).

A judgment is `queued` until the executor starts on it and calls `began` (then `running`, one attempt
counted); waiting in the executor's own queue costs nothing. On start, judgments the store holds
unfinished (a crash or a restart) are dispatched again; one that has already been started `max_attempts`
times (its judge died each time) ends as `judge_error` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

from cuda_agent.service.executors import Executor, Job, judge_error
from cuda_agent.service.metrics import Metrics
from cuda_agent.service.store import KeyConflict, Store
from cuda_agent.service.submission import Submission
from cuda_agent.task import TaskError, load_task

log = logging.getLogger("cuda_agent.service.jobs")


class QueueFull(Exception):
    def __init__(self, pending: int, retry_after_s: int) -> None:
        super().__init__(f"the judge queue is full ({pending} judgments pending); retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class JobQueue:
    def __init__(self, store: Store, executor: Executor, scratch: Path, max_pending: int = 64,
                 max_attempts: int = 3) -> None:  # fmt: skip
        self.store = store
        self.executor = executor
        self.scratch = Path(scratch)
        self.max_pending = max_pending
        self.max_attempts = max_attempts
        self.metrics = Metrics(
            queued=lambda: max(0, self.pending - self.executor.busy()), running=lambda: self.executor.busy(),
            lanes_busy=lambda: self.executor.busy(), lanes=lambda: self.executor.lanes,
        )  # fmt: skip
        self.pending = 0
        self.ready = False
        self._lock = threading.Lock()
        self._watchers: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._closing = False  # wake_all: the server is shutting down and answers polls at once
        self._between_verdicts = 5.0  # a running estimate of the time between verdicts, for Retry-After
        self._last_verdict: float | None = None

    # ---- life --------------------------------------------------------------------------------------
    def start(self) -> None:
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.executor.start(self._report, self._began)
        unfinished = self.store.recover()
        with self._lock:
            self.pending += len(unfinished)
        for judgment_id in unfinished:
            self._dispatch(judgment_id)
        if unfinished:
            print(f"resumed {len(unfinished)} unfinished judgment(s)", file=sys.stderr, flush=True)
        self.ready = True

    def close(self) -> None:
        self.ready = False
        self.executor.close()

    # ---- admitting ---------------------------------------------------------------------------------
    def submit(self, client: str, submission: Submission, key: str | None = None) -> tuple[str, bool]:
        """(judgment id, created). A key this client used before returns that judgment (even when the
        queue is full); KeyConflict when it was for other content."""
        return self.submit_many(client, [(submission, key)])[0]

    def submit_many(self, client: str, items: list[tuple[Submission, str | None]]) -> list[tuple[str, bool]]:
        """All or nothing: a batch that does not fit in the queue is refused whole (429), and one key
        conflict refuses the batch before anything of it is added."""
        digests = [s.digest() for s, _ in items]
        answers: list[tuple[str, bool] | None] = []
        in_batch: dict[str, str] = {}
        for (_, key), digest in zip(items, digests, strict=True):
            if key is not None and in_batch.setdefault(key, digest) != digest:
                raise KeyConflict(None, key)  # one key, two contents: refused as a resubmission would be
        with self._lock:
            for (_, key), digest in zip(items, digests, strict=True):
                found = self.store.find(client, key) if key is not None else None
                if found is not None and found[1] != digest:
                    raise KeyConflict(found[0])
                answers.append((found[0], False) if found is not None else None)
            new = answers.count(None)
            if new and self.pending + new > self.max_pending:
                self.metrics.refused.labels("queue_full").inc()
                raise QueueFull(self.pending, self.retry_after())
            created = []
            for index, ((submission, key), digest) in enumerate(zip(items, digests, strict=True)):
                if answers[index] is None:
                    if key is not None and self.store.find(client, key) is not None:  # twice in this batch
                        answers[index] = (self.store.find(client, key)[0], False)  # type: ignore[index]
                        continue
                    judgment_id = self.store.add(client, digest, submission.to_blob(), submission.task_name, key)
                    answers[index] = (judgment_id, True)
                    created.append(judgment_id)
            self.pending += len(created)
        for judgment_id in created:
            self.metrics.accepted.inc()
            self._log_state(judgment_id)
            self._dispatch(judgment_id)
        return [a for a in answers if a is not None]

    def retry_after(self) -> int:
        """Seconds until a place in the queue is likely free: the recent time between verdicts."""
        return max(1, min(300, round(self._between_verdicts)))

    # ---- running -----------------------------------------------------------------------------------
    def _dispatch(self, judgment_id: str) -> None:
        pending = self.store.pending(judgment_id)
        if pending is None:
            return
        payload, attempts = pending
        if attempts >= self.max_attempts:
            self._report(judgment_id, judge_error(
                f"started {attempts} times without a verdict (its judge died each time); not retried"
            ))  # fmt: skip
            return
        folder = self.scratch / judgment_id
        try:
            shutil.rmtree(folder, ignore_errors=True)
            submission = Submission.from_blob(payload)
            submission.write_to(folder)
            try:
                task = load_task(folder / "model.py", name=submission.task_name or "task")
            except TaskError:
                task = None  # the judge reports the broken task as its verdict, as it does locally
            self.executor.submit(Job(judgment_id, folder, task, submission, attempts + 1))
        except Exception as exc:  # accepted, so it ends with an outcome: this one says why
            self._report(judgment_id, judge_error(f"could not hand the judgment to the judge: {type(exc).__name__}: {exc}"))

    def _began(self, judgment_id: str) -> bool:
        """An executor starts judging (any thread): `running` now, one attempt counted. False when the
        judgment is not queued any more (it has a verdict): the executor skips it."""
        attempt = self.store.begin(judgment_id)
        if attempt is None:
            return False
        if attempt > 1:
            self.metrics.retries.inc()
        self._log_state(judgment_id)
        return True

    def _log_state(self, judgment_id: str) -> None:
        """One structured line per state change: id, tenant, task, state (and status), seconds since
        submitted. Never the submission's contents or a token (the tenant is its token's short hash)."""
        record = self.store.get(judgment_id)
        if record is None or not log.isEnabledFor(logging.INFO):
            return
        end = record.finished or record.started or record.submitted
        status = (record.result or {}).get("status") if record.state == "done" else None
        log.info("judgment id=%s tenant=%s task=%s state=%s%s attempts=%d seconds=%.3f", record.id, record.client,
                 record.task_name or "-", record.state, f" status={status}" if status else "", record.attempts,
                 max(0.0, end - record.submitted))  # fmt: skip

    def _report(self, judgment_id: str, outcome: dict[str, Any]) -> None:
        """An executor's outcome (any thread). Only the first outcome of a judgment is recorded."""
        if not self.store.finish(judgment_id, outcome):
            return
        record = self.store.get(judgment_id)
        latency = record.finished - record.submitted if record and record.finished else None
        self.metrics.observe(outcome, latency)
        with self._lock:
            self.pending -= 1
            now = time.monotonic()
            if self._last_verdict is not None:
                self._between_verdicts = 0.8 * self._between_verdicts + 0.2 * (now - self._last_verdict)
            self._last_verdict = now
        shutil.rmtree(self.scratch / judgment_id, ignore_errors=True)
        self._log_state(judgment_id)
        self._wake(judgment_id)

    # ---- waiting -----------------------------------------------------------------------------------
    def watch(self, judgment_id: str) -> asyncio.Event:
        """An event set when the judgment's verdict is recorded (check the store after calling this)."""
        event = asyncio.Event()
        with self._lock:
            if self._closing:  # shutting down: no poll may wait into the grace's end
                event.set()
                return event
            self._watchers.setdefault(judgment_id, []).append((asyncio.get_running_loop(), event))
        return event

    def unwatch(self, judgment_id: str, event: asyncio.Event) -> None:
        with self._lock:
            left = [(lp, ev) for lp, ev in self._watchers.get(judgment_id, []) if ev is not event]
            if left:
                self._watchers[judgment_id] = left
            else:
                self._watchers.pop(judgment_id, None)

    @property
    def closing(self) -> bool:
        """The server is shutting down (`wake_all` was called): waits end at once."""
        return self._closing

    def wake_all(self) -> None:
        """Answer every long-poll now with the state it has (the server is shutting down: a poll still
        waiting when its grace ends is cancelled, which the client would read as a 500)."""
        with self._lock:
            self._closing = True
            ids = list(self._watchers)
        for judgment_id in ids:
            self._wake(judgment_id)

    def _wake(self, judgment_id: str) -> None:
        with self._lock:
            watchers = self._watchers.pop(judgment_id, [])
        for loop, event in watchers:
            with contextlib.suppress(RuntimeError):  # that loop has closed
                loop.call_soon_threadsafe(event.set)

