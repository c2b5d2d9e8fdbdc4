"""eval/kernelbench_runs.py, the task runner of the KernelBench sweeps: the side-by-side tasks really run
at once, the others one at a time after them, a task past the budget is skipped without running, and
the callback sees every record; `run_in_fork` brings back a forked child's record or why there is none."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from cuda_agent.eval.kernelbench_runs import run_tasks


@dataclass(frozen=True)
class Bench:
    task_id: str


def test_side_by_side_tasks_overlap_and_the_rest_run_alone_after_them() -> None:
    benches = [Bench(f"level1/{i}_T") for i in range(4)]
    running, peak, order = [0], [0], []
    lock = threading.Lock()

    def run(bench: Bench) -> dict:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            order.append(bench.task_id)
        time.sleep(0.2)
        with lock:
            running[0] -= 1
        return {"status": "ok"}

    seen = []
    results = run_tasks(benches, run, side_by_side=benches[:2], jobs=2,
                        on_record=lambda b, r, so_far: seen.append((b.task_id, len(so_far))))  # fmt: skip
    assert peak[0] == 2 and set(order[:2]) == {"level1/0_T", "level1/1_T"} and order[2:] == ["level1/2_T", "level1/3_T"]
    assert set(results) == {b.task_id for b in benches} and [n for _, n in seen] == [1, 2, 3, 4]


def test_a_task_that_failed_beside_others_is_run_again_alone_and_keeps_the_first_record() -> None:
    """A side-by-side task may run out of memory or time because of its neighbours: it is run again alone
    (with `run`, not `run_beside`), after the side-by-side phase and before the tasks that run alone, and
    its record says what happened beside the others. A success beside others is kept as it is."""
    benches = [Bench("a"), Bench("b"), Bench("c")]
    calls = []

    def beside(bench: Bench) -> dict:
        calls.append(("beside", bench.task_id))
        return {"status": "task_error" if bench.task_id == "a" else "ok", "reason": "out of memory"}

    def alone(bench: Bench) -> dict:
        calls.append(("alone", bench.task_id))
        return {"status": "ok"}

    saved = []
    results = run_tasks(benches, alone, side_by_side=benches[:2], jobs=2, run_beside=beside,
                        again_alone=lambda record: record["status"] != "ok",
                        on_record=lambda b, r, so_far: saved.append((b.task_id, r["status"])))  # fmt: skip
    # Until its run alone ends, the failure beside others is saved as skipped (a resumed run retries it).
    assert ("a", "skipped") in saved and ("a", "task_error") not in saved and saved[-2:] == [("a", "ok"), ("c", "ok")]
    assert sorted(calls[:2]) == [("beside", "a"), ("beside", "b")] and calls[2:] == [("alone", "a"), ("alone", "c")]
    assert results["a"] == {"status": "ok", "beside_others": "task_error: out of memory"}
    assert results["b"]["status"] == "ok" and "beside_others" not in results["b"]


def test_a_task_not_started_within_the_budget_is_skipped_not_run() -> None:
    ran = []
    results = run_tasks([Bench("a"), Bench("b")], lambda b: ran.append(b.task_id) or {"status": "ok"},
                        budget_s=10.0, began=time.monotonic() - 11.0)  # fmt: skip
    assert ran == [] and all(r["status"] == "skipped" and "--budget of 10 s" in r["reason"] for r in results.values())


def _record_of(value: int) -> dict:
    return {"status": "ok", "value": value * 2}


def _exits() -> dict:
    import os

    os._exit(7)


def _sleeps() -> dict:
    time.sleep(60)
    return {"status": "ok"}


def _raises() -> dict:
    raise ValueError("the task's own failure")


def test_run_in_fork_returns_the_childs_record_or_why_there_is_none() -> None:
    """A forked child's record comes back; one that exits without a record, hangs or raises gets a record
    saying so, and the server forks the next child as usual."""
    from cuda_agent.eval.kernelbench_runs import run_in_fork

    got = run_in_fork(_record_of, (21,), 60, preload=("json",))
    assert got["status"] == "ok" and got["value"] == 42 and got["seconds"] >= 0
    assert run_in_fork(_exits, (), 60, preload=("json",))["reason"] == "the child ended without a result: exit 7"
    hung = run_in_fork(_sleeps, (), 2, preload=("json",))
    assert hung["status"] == "timeout" and hung["reason"] == "over 2 s"
    raised = run_in_fork(_raises, (), 60, preload=("json",))
    assert raised["status"] == "error" and raised["reason"] == "ValueError: the task's own failure"
    assert run_in_fork(_record_of, (1,), 60, preload=("json",))["value"] == 2
