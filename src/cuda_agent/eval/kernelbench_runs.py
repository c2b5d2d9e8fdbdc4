"""One record per KernelBench task, made by a run of that task alone or beside others, within a time budget.

The scripts that sweep KernelBench on a GPU (scripts/kernelbench_memory.py, scripts/kernelbench_degeneracy.py)
run each task in a child process of its own. Most of a child's time on an H200 is its start-up, so tasks
that leave the GPU to each other (the caller says which: small inputs and outputs) run a few at once first,
then the rest one at a time. The device allows 10 minutes a call, so a task not started by the deadline
gets a `skipped` record instead, and a later run resumes from the records.

A child is forked from a server that imported the heavy modules once (`run_in_fork`): importing torch was
about 3 s of every child on the device's host, a third of a level-1 task's audit. The server never touches
CUDA, so every child still makes a context of its own and its memory figures are its own.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

Record = dict[str, Any]


def run_tasks(
    benches: Sequence[Any],
    run: Callable[[Any], Record],
    *,
    side_by_side: Iterable[Any] = (),
    jobs: int = 1,
    budget_s: float | None = None,
    began: float | None = None,
    on_record: Callable[[Any, Record, dict[str, Record]], None] | None = None,
    run_beside: Callable[[Any], Record] | None = None,
    again_alone: Callable[[Record], bool] | None = None,
) -> dict[str, Record]:
    """`run(bench)` for every bench, by task id: those in `side_by_side` `jobs` at a time (with
    `run_beside` where given), then the others one at a time. A side-by-side record for which
    `again_alone(record)` holds is run again alone after the side-by-side phase, before the others, and
    keeps the first as `beside_others` (a task that ran out of memory or time beside others may not have
    alone: a sweep must not record its neighbours' doing as the task's). A bench not started `budget_s`
    after `began` (monotonic; default now) is recorded as skipped, not run. `on_record(bench, record,
    records so far)` after each, one at a time (progress, saving)."""
    began = time.monotonic() if began is None else began
    together = [b for b in side_by_side if b in benches]
    results: dict[str, Record] = {}
    lock = threading.Lock()

    firsts: dict[str, str] = {}  # task id -> what its side-by-side run ended with, where it runs again alone

    def one(bench: Any, beside: bool = False) -> None:
        if budget_s is not None and time.monotonic() - began > budget_s:
            record: Record = {"status": "skipped", "reason": f"the run's --budget of {budget_s:g} s was spent"}
        else:
            record = (run_beside or run)(bench) if beside else run(bench)
        with lock:
            if beside and again_alone is not None and record.get("status") != "skipped" and again_alone(record):
                # Saved as skipped until its run alone ends: a call cut before then leaves a record that a
                # resumed run retries, never the neighbours' doing as the task's own.
                firsts[bench.task_id] = f"{record.get('status')}: {str(record.get('reason', ''))[:200]}"
                record = {"status": "skipped", "reason": "to be run again alone", "beside_others": firsts[bench.task_id]}
            elif bench.task_id in firsts:
                record = {**record, "beside_others": firsts[bench.task_id]}
            results[bench.task_id] = record
            if on_record is not None:
                on_record(bench, record, dict(results))

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        list(pool.map(lambda bench: one(bench, beside=True), together))
    for bench in together:
        if bench.task_id in firsts:
            one(bench)
    for bench in benches:
        if bench not in together:
            one(bench)
    return results


_server_lock = threading.Lock()  # run_tasks calls run_in_fork from several threads
_server_preload: list[str] | None = None


def _fork_context(preload: Sequence[str]) -> Any:
    """The forkserver context, its preload set on first use. There is one fork server per process, so a
    later call with other modules to preload is refused rather than silently served without them."""
    global _server_preload
    with _server_lock:
        context = multiprocessing.get_context("forkserver")
        if _server_preload is None:
            _server_preload = list(preload)
            context.set_forkserver_preload(_server_preload)
        elif _server_preload != list(preload):
            raise ValueError(f"the fork server already preloads {_server_preload}, not {list(preload)}")
        return context


def _child(conn: Any, target: Callable[..., Record], args: tuple[Any, ...]) -> None:
    sys.stdout = sys.stderr  # the parent's stdout carries its table
    try:
        record = target(*args)
    except Exception as exc:  # the target's own failure: a record, as any other
        record = {"status": "error", "reason": f"{type(exc).__name__}: {str(exc)[:300]}", "where": where(exc)}
    conn.send(record)
    conn.close()


def where(exc: BaseException, frames: int = 4) -> list[str]:
    """The innermost frames of `exc` as 'file:line in function': an error on a task names where it was
    raised, so that a judge bug (an allocation of its own) is told from the task's (an op without a kernel)."""
    return [f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in traceback.extract_tb(exc.__traceback__)[-frames:]]


def run_in_fork(target: Callable[..., Record], args: tuple[Any, ...], timeout_s: float,
                preload: Sequence[str] = ("torch",)) -> Record:  # fmt: skip
    """`target(*args)` in a process of its own, forked from a server that imported `preload`: its record,
    or one saying why there is none (over `timeout_s`: killed; the process ended without sending one: a
    crash, `os._exit`, the kernel's OOM killer). `target` must be importable by name (a module-level
    function). A record carries `seconds` (wall, start to reply) unless the target set it."""
    forks = _fork_context(preload)
    began = time.monotonic()
    ours, theirs = forks.Pipe(duplex=False)
    process = forks.Process(target=_child, args=(theirs, target, args), daemon=True)
    process.start()
    theirs.close()
    try:
        if not ours.poll(timeout_s):
            process.kill()
            return {"status": "timeout", "reason": f"over {timeout_s:g} s", "seconds": timeout_s}
        record = ours.recv()
    except (EOFError, OSError):
        process.join(10)
        record = {"status": "error", "reason": f"the child ended without a result: exit {process.exitcode}"}
    finally:
        ours.close()
        process.join(30)
    record.setdefault("seconds", round(time.monotonic() - began, 2))
    return record
