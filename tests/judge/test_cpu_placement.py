"""Spare workers warmed on the compilers' CPUs and moved to their lane's when taken (trusted/cpu_placement.py,
JudgeConfig.spares_on_build_cpus): every thread of the worker moves, threads it starts later follow, and a
worker that cannot be moved is started again on the lane's CPUs, with no more spares warmed elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cuda_agent.judge.trusted import pool as pool_module
from cuda_agent.judge.trusted.cpu_placement import move_threads

CPUS = sorted(os.sched_getaffinity(0))
needs_two = pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs to move a worker between")
LANE, BUILD = frozenset(CPUS[:1]), frozenset(CPUS[1:])

THREADED = """
import sys, threading
stop = threading.Event()
for _ in range(3):
    threading.Thread(target=stop.wait, daemon=True).start()
print("ready", flush=True)
sys.stdin.readline()  # moved now: start one more thread, which inherits the mover's mask
threading.Thread(target=stop.wait, daemon=True).start()
print("more", flush=True)
sys.stdin.readline()
"""


def _affinities(pid: int) -> set[frozenset[int]]:
    return {frozenset(os.sched_getaffinity(int(tid))) for tid in os.listdir(f"/proc/{pid}/task")}


@needs_two
def test_every_thread_of_a_worker_moves_and_later_threads_follow() -> None:
    child = subprocess.Popen([sys.executable, "-c", THREADED], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, preexec_fn=lambda: os.sched_setaffinity(0, BUILD))  # fmt: skip
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        assert _affinities(child.pid) == {BUILD} and len(os.listdir(f"/proc/{child.pid}/task")) >= 4
        assert move_threads(child.pid, LANE) is None
        assert _affinities(child.pid) == {LANE}
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "more"
        assert _affinities(child.pid) == {LANE}
    finally:
        child.kill()
        child.wait()
    assert move_threads(child.pid, LANE) is not None  # gone: said so, not raised


@needs_two
def test_spares_warm_on_the_build_cpus_and_serve_on_the_lanes(cpu_pool_factory) -> None:
    pool = cpu_pool_factory(cpus=LANE, warm_cpus=BUILD, spare_references=1, spare_candidates=1, replenish=False)
    reference = pool._spare_references[0].result()
    candidate = pool._spares.queue[0].result()
    assert _affinities(reference.worker.pid) == {BUILD} and _affinities(candidate.worker.pid) == {BUILD}
    with pool.reference("task-a") as slot:
        assert slot.worker.pid == reference.worker.pid and _affinities(slot.worker.pid) == {LANE}
    taken = pool.candidate_warmed_or_again(pool.take_candidate())
    assert taken.worker.pid == candidate.worker.pid and _affinities(taken.worker.pid) == {LANE}
    assert taken.worker.call("warm", 60, gpu=False).get("ok")  # still a working worker
    pool.retire(taken)
    assert not pool.warm_retries


@needs_two
def test_a_worker_that_cannot_be_moved_is_started_again_and_spares_warm_on_the_lane(
    cpu_pool_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "move_threads", lambda pid, cpus: "cannot move thread 1: Operation not permitted")
    pool = cpu_pool_factory(cpus=LANE, warm_cpus=BUILD, spare_references=1, spare_candidates=0, replenish=False)
    spare = pool._spare_references[0].result()
    with pool.reference("task-a") as slot:
        assert slot.warm_error is None and slot.worker.pid != spare.worker.pid
    assert pool.warm_cpus is None  # no more spares warmed away from the lane
    assert pool.warm_retries[0]["first"].startswith("it could not be moved to its lane's CPUs: cannot move")
    started = pool._starter.submit(pool._warm_new, pool._new_reference).result()  # a starter pins itself anew
    try:
        assert _affinities(started.worker.pid) == {LANE}
    finally:
        started.close()
