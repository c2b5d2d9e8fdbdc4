"""One record per KernelBench task, made by a run of that task alone or beside others, within a time budget.

The scripts that sweep KernelBench on a GPU (scripts/kernelbench_memory.py, scripts/kernelbench_degeneracy.py)
run each task in a child process of its own. Most of a child's time on an H200 is its start-up, so tasks
that leave the GPU to each other (the caller says which: small inputs and outputs) run a few at once first,
then the rest one at a time. The device allows 10 minutes a call, so a task not started by the deadline
gets a `skipped` record instead, and a later run resumes from the records.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
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
) -> dict[str, Record]:
    """`run(bench)` for every bench, by task id: those in `side_by_side` `jobs` at a time, then the others
    one at a time. A bench not started `budget_s` after `began` (monotonic; default now) is recorded as
    skipped, not run. `on_record(bench, record, records so far)` after each, one at a time (progress,
    saving)."""
    began = time.monotonic() if began is None else began
    together = [b for b in side_by_side if b in benches]
    results: dict[str, Record] = {}
    lock = threading.Lock()

    def one(bench: Any) -> None:
        if budget_s is not None and time.monotonic() - began > budget_s:
            record: Record = {"status": "skipped", "reason": f"the run's --budget of {budget_s:g} s was spent"}
        else:
            record = run(bench)
        with lock:
            results[bench.task_id] = record
            if on_record is not None:
                on_record(bench, record, dict(results))

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        list(pool.map(one, together))
    for bench in benches:
        if bench not in together:
            one(bench)
    return results
