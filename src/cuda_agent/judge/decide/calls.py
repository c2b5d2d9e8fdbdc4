"""Calls from the judgment to its two workers that turn worker trouble into verdicts.

Runs in the parent. Establishes no fact of the reward by itself; it decides how a failure is named: a
candidate worker that dies, hangs or answers garbage is the candidate's fault (`runtime_error`,
`timeout`, `rejected` for a rule it broke), a reference worker that fails is a `task_error` and retires
that worker. Every reply is a claim from another process: nothing here reads more from it than `ok`,
`error` and `message`, and a missing or malformed field fails closed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from cuda_agent.judge.common.channel import WorkerFailure, WorkerHandle
from cuda_agent.judge.decide.verdict import Status


class WorkerCalls:
    """Calls to the workers (mixed into `Judgment`)."""

    def _note_call(self, worker: str, command: str, began: float) -> None:
        """Count a round trip to a worker (`checks["worker_calls"]`: count and seconds per command), so
        that a slow judgment says which exchange it waited on without a profiler."""
        calls = self.checks.setdefault("worker_calls", {})
        entry = calls.setdefault(f"{worker}.{command}", [0, 0.0])
        entry[0] += 1
        entry[1] = round(entry[1] + time.perf_counter() - began, 6)

    def _candidate_call(self, cand: WorkerHandle, command: str, timeout: float, what: str, **kw: Any) -> dict:
        began = time.perf_counter()
        try:
            reply = cand.call(command, timeout, **kw)
        except WorkerFailure as exc:
            if exc.kind == "timeout":
                raise self.fail(
                    Status.TIMEOUT,
                    f"{what} did not finish within {timeout:.0f} s (an endless loop in a kernel or a deadlock?)",
                ) from None
            detail = _last_error_line(exc.log_tail)
            raise self.fail(
                Status.RUNTIME_ERROR,
                f"the candidate {exc} ({what})" + (f": {detail}" if detail else ""),
            ) from None
        finally:
            self._note_call("candidate", command, began)
        if not reply.get("ok") and reply.get("error") == "RuleViolation":
            raise self.fail(Status.REJECTED, str(reply.get("message", ""))[:1500])
        if not reply.get("ok"):
            message = reply.get("message", "")
            if reply.get("error") == "OutOfMemoryError" or "out of memory" in message.lower():
                message = "CUDA out of memory: " + message.splitlines()[0][:300]
            raise self.fail(Status.RUNTIME_ERROR, f"{what} failed: {reply.get('error')}: {message[:1500]}")
        return reply

    def _reference_call(
        self, ref: WorkerHandle, command: str, timeout: float, *, refuse_errors: bool = True, **kw: Any
    ) -> dict:
        """A call to the reference worker. Its failing ends the judgment; so does a reply with ok=False,
        unless `refuse_errors` is off (a measurement the judgment can go without): that reply is returned."""
        began = time.perf_counter()
        try:
            return self._reference_result(command, lambda: ref.call(command, timeout, **kw), refuse_errors)
        finally:
            self._note_call("reference", command, began)

    def _reference_send(self, ref: WorkerHandle, command: str, **kw: Any) -> str:
        try:
            return ref.send(command, **kw)
        except WorkerFailure as exc:
            self.reference_slot.broken = True
            raise self.fail(Status.TASK_ERROR, f"the reference worker {exc} during {command}") from None

    def _reference_result(self, command: str, exchange: Callable[[], Any], refuse_errors: bool = True) -> Any:
        try:
            reply = exchange()
        except WorkerFailure as exc:
            self.reference_slot.broken = True  # never reused after a failure
            raise self.fail(
                Status.TASK_ERROR,
                f"the reference worker {exc} during {command}: {_last_error_line(exc.log_tail)}",
            ) from None
        if not reply.get("ok") and refuse_errors:
            self.reference_slot.broken = True
            raise self.fail(
                Status.TASK_ERROR,
                f"the reference failed during {command}: {reply.get('error')}: {reply.get('message', '')[:1500]}",
            )
        return reply


def _last_error_line(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for line in reversed(lines):
        if any(w in line for w in ("Error", "error", "Abort", "abort", "Segmentation", "terminate")):
            return line[:500]
    return lines[-1][:500] if lines else ""


def _thread_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _finite(value: Any) -> float:
    """A worker's number, or 0.0 when it is not a finite non-negative float (a reply is never trusted)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if 0.0 <= number < 1e9 else 0.0
