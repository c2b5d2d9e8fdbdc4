"""`JudgeService`: judging as a long-lived service, one submission or a stream of them.

An RL run or an agent judges thousands of candidates, so the service keeps for each GPU a `WorkerPool`
(warm candidate workers, reference workers kept per task) and pipelines a batch:

- builds run in parallel on the CPU cores (compilers are pinned to cores the GPU workers do not use);
- each GPU has one lane that takes built submissions in the order their builds finish and runs their
  GPU stages one at a time, under a machine-wide lock of that GPU, so timings stay honest;
- at most a bounded number of built submissions wait for a lane (their scratch lives in /dev/shm).

Isolation is unchanged: every candidate gets a fresh sandboxed process that is killed after it.

Trust boundary: runs in the parent. It establishes no fact itself; it decides which GPU lane and which
workers a judgment gets, and keeps candidate workers single-use (trusted/pool.py), so nothing one candidate
leaves in its process reaches another.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.judgment import Judgment, require_gpu, scratch_root
from cuda_agent.judge.decide.lane_queue import BuiltQueue
from cuda_agent.judge.decide.verdict import Status, Verdict, failure, stage_outcomes
from cuda_agent.judge.trusted.gpumem import leaves_room_twice
from cuda_agent.judge.trusted.lane_share import LaneShare, depth_refused
from cuda_agent.judge.trusted.pool import WorkerPool, pin_current_thread
from cuda_agent.task import Task, TaskError, load_task

# Candidate workers a long-lived service keeps warm per GPU (pool.py `spare_candidates`): a batch's lane
# takes one every 2-3 s and one takes about 4 s to warm, two at a time. Each holds a CUDA context (about
# 0.5 GB of GPU memory) and an imported torch (about 0.4 GB of host memory).
LONG_LIVED_SPARES = 3
# Reference workers it keeps warm for new tasks: runs over many tasks meet one every few verdicts (pool.py).
LONG_LIVED_SPARE_REFERENCES = 2

Item = Path | tuple[Path, Task | None]


def split_cpus(lanes: int) -> tuple[list[frozenset[int] | None], frozenset[int] | None]:
    """Cores for each GPU lane's workers and the rest for compilers; no pinning on small machines,
    where keeping cores apart would starve one side."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return [None] * lanes, None
    per_lane = min(4, len(cpus) // 4)
    if per_lane < 2 or len(cpus) - per_lane * lanes < 2:
        return [None] * lanes, None
    lane_cpus = [frozenset(cpus[k * per_lane : (k + 1) * per_lane]) for k in range(lanes)]
    return lane_cpus, frozenset(cpus[per_lane * lanes :])


class JudgeService:
    """Judge submissions with warm workers. Use as a context manager; `judge()` and `judge_many()`.

    `devices`: GPU indices to use (default: the first visible one); one lane each.
    `build_workers`: concurrent builds in `judge_many` (default: the compiler cores).
    `keep_warm`: start a replacement worker whenever one is taken (off for one-shot use).
    """

    def __init__(
        self,
        config: JudgeConfig | None = None,
        devices: Sequence[int] | None = None,
        build_workers: int | None = None,
        keep_warm: bool = True,
    ) -> None:
        self.config = config or JudgeConfig()
        self.devices = list(devices) if devices else [0]
        lane_cpus, self.build_cpus = split_cpus(len(self.devices))
        # A build has 1-3 uncached sources and compiles them in parallel: half as many builds as compiler
        # cores keeps them busy without oversubscribing (which stretches every compile towards its timeout).
        self.build_workers = build_workers or max(1, len(self.build_cpus or os.sched_getaffinity(0)) // 2)
        root = scratch_root(self.config)
        root.mkdir(parents=True, exist_ok=True)
        single = devices is None
        spares = LONG_LIVED_SPARES if keep_warm else 1
        self.pools = [
            WorkerPool(root, device=None if single else d, cpus=cpus, replenish=keep_warm, spare_candidates=spares,
                       warm_cpus=self.build_cpus if self.config.spares_on_build_cpus else None,
                       spare_references=LONG_LIVED_SPARE_REFERENCES if keep_warm else 1,
                       warm_beside_timing=self.config.warm_beside_timing)
            for d, cpus in zip(self.devices, lane_cpus, strict=True)
        ]
        self._free_lanes: queue.Queue[WorkerPool] = queue.Queue()
        self.lanes_busy = 0  # GPU lanes of judge_many running a judgment now (the server's metrics)
        self._busy_lock = threading.Lock()
        self._started = False
        self.keep_warm = keep_warm
        self.lane_depth_note = ""  # why judge_many ran one judgment per GPU where lane_depth asked for 2

    def __enter__(self) -> JudgeService:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Check for a GPU and begin warming workers (a few seconds, in the background)."""
        if self._started:
            return
        require_gpu()
        for pool in self.pools:
            pool.start()
            self._free_lanes.put(pool)
        if self.keep_warm:  # a long-lived service builds the precompiled header before it is needed
            self._pch = threading.Thread(target=_warm_pch, args=(self.config,), daemon=True)
            self._pch.start()
        self._started = True

    def close(self) -> None:
        """Close every pool, each one even where closing another raised (SystemExit from a SIGTERM among
        them, `exit_on_sigterm`): a pool left open leaves its workers running."""
        first: BaseException | None = None
        for pool in self.pools:
            try:
                pool.close()
            except BaseException as exc:  # re-raised below, after the other pools
                first = first or exc
        if first is not None:
            raise first

    # ---- one submission ------------------------------------------------------------------------------
    def worker_lifecycle(self) -> dict[str, list[dict[str, float]]]:
        """The parts of the last candidate workers' warm-ups and retirements on every GPU (WorkerPool.warmups,
        .retirements), oldest first per GPU: what the lane's timing and GPU lock waited for."""
        return {"warmups": [dict(r) for pool in self.pools for r in list(pool.warmups)],
                "retirements": [dict(r) for pool in self.pools for r in list(pool.retirements)]}  # fmt: skip

    def judge(self, submission: Path, task: Task | None = None) -> Verdict:
        """Judge one submission folder against `task` (default: its own model.py)."""
        self.start()
        resolved, error = _resolve_task(Path(submission), task)
        if error is not None:
            return error
        assert resolved is not None
        pool = self._free_lanes.get()
        judgment = Judgment(Path(submission), resolved, self.config)
        try:
            return judgment.run(pool)
        finally:
            judgment.cleanup()
            self._free_lanes.put(pool)

    # ---- many submissions ------------------------------------------------------------------------------
    def judge_many(self, items: Iterable[Item], task: Task | None = None) -> Iterator[tuple[int, Verdict]]:
        """Judge many submissions: yields (index into `items`, verdict) as verdicts are reached.

        Each item is a folder (judged against `task`, or its own model.py) or (folder, task). `items` is
        read lazily by a thread of its own, so it may be a stream that blocks for the next submission (the
        HTTP server feeds one); verdicts come as soon as they are reached, and the batch ends when the
        stream does."""
        self.start()
        results: queue.Queue[tuple[int, Verdict] | int] = queue.Queue()  # an int: how many items there were
        built: BuiltQueue[tuple[int, Judgment] | None] = BuiltQueue()
        waiting = threading.BoundedSemaphore(self.build_workers + 2 * len(self.pools))
        stop = threading.Event()

        def build(index: int, submission: Path, given: Task | None) -> None:
            waiting.acquire()  # a permit per built submission waiting for the GPU, handed to the lane
            handed_over = False
            try:
                if stop.is_set():
                    return
                resolved, verdict = _resolve_task(submission, given)
                judgment = None
                if verdict is None:
                    assert resolved is not None
                    judgment = Judgment(submission, resolved, self.config)
                    verdict = judgment.build_only()
                if verdict is None:
                    built.put((index, judgment))
                    handed_over = True
                else:
                    if judgment is not None:
                        judgment.cleanup()
                    results.put((index, verdict))
            except Exception as exc:  # fail closed, and keep the batch going
                results.put((index, failure(Status.RUNTIME_ERROR, f"judge error ({type(exc).__name__}: {exc})")))
            finally:
                if not handed_over:
                    waiting.release()

        def takes(pool: WorkerPool) -> Callable[[tuple[int, Judgment] | None], bool]:
            share = pool.share
            return lambda item: item is None or share is None or not share.task_in_flight(item[1].task.digest)

        def lane(pool: WorkerPool) -> None:
            pin_current_thread(pool.cpus)
            while True:
                item = built.get(takes(pool))
                if item is None:
                    return
                index, judgment = item
                verdict: Verdict | None = None
                with self._busy_lock:
                    self.lanes_busy += 1
                try:
                    if not stop.is_set():
                        verdict = self._on_lane(judgment, pool)
                except Exception as exc:  # never lose a verdict: the consumer waits for every index
                    verdict = failure(Status.RUNTIME_ERROR, f"judge error ({type(exc).__name__}: {exc})")
                finally:
                    with self._busy_lock:
                        self.lanes_busy -= 1
                    judgment.cleanup()
                    waiting.release()
                if verdict is not None:
                    results.put((index, verdict))

        lanes = [self._free_lanes.get() for _ in self.pools]
        depth = self._share_lanes(lanes)
        lane_threads = [threading.Thread(target=lane, args=(p,), daemon=True) for p in lanes for _ in range(depth)]
        for thread in lane_threads:
            thread.start()
        builders = ThreadPoolExecutor(
            self.build_workers, thread_name_prefix="judge-build", initializer=pin_current_thread,
            initargs=(self.build_cpus,),
        )  # fmt: skip
        feed_error: list[BaseException] = []

        def feed() -> None:
            count = 0
            try:
                for item in items:
                    if stop.is_set():
                        break
                    submission, given = (Path(item[0]), item[1]) if isinstance(item, tuple) else (Path(item), task)
                    builders.submit(build, count, submission, given)
                    count += 1
            except BaseException as exc:  # raised to the consumer once the verdicts already due are out
                if not stop.is_set():
                    feed_error.append(exc)
            finally:
                results.put(count)

        threading.Thread(target=feed, name="judge-feed", daemon=True).start()
        try:
            total, given_out = None, 0
            while total is None or given_out < total:
                got = results.get()
                if isinstance(got, int):
                    total = got
                    continue
                given_out += 1
                yield got
            if feed_error:
                raise feed_error[0]
        finally:
            stop.set()
            builders.shutdown(wait=True, cancel_futures=True)
            for _ in lane_threads:
                built.put(None)
            for thread in lane_threads:
                thread.join()
            for leftover in built.drain():  # judgments built after the consumer stopped
                if leftover is not None:
                    leftover[1].cleanup()
            for pool in lanes:
                if pool.share is not None:
                    pool.settle()  # teardowns queued as readers of the shared lane end before it goes
                    pool.share = None
                self._free_lanes.put(pool)

    def _share_lanes(self, pools: list[WorkerPool]) -> int:
        """Lane threads per GPU for this batch: `config.lane_depth` where every pool can share its lane
        (trusted/lane_share.py), else 1 with the reason in `lane_depth_note`."""
        if self.config.lane_depth == 1:
            return 1
        self.lane_depth_note = next((why for p in pools if (why := depth_refused(p.candidates_share_no_place()))), "")
        if self.lane_depth_note:
            return 1
        for pool in pools:
            pool.share = LaneShare(self.config.lane_depth, pool.gpu_lock_path(), preempt=self.config.lane_preempt)
        return self.config.lane_depth

    def _on_lane(self, judgment: Judgment, pool: WorkerPool) -> Verdict:
        """A built judgment's GPU part; at depth 2 beside another, and judged again alone where a failure
        may be the other candidate's doing (`Judgment.alone_again`)."""
        share = pool.share
        if share is None:
            return judgment.run_built(pool)
        with share.judgment(id(judgment), judgment.task.digest, leaves_room_twice):
            verdict = judgment.run_built(pool)
        if not judgment.alone_again:
            return verdict
        again = Judgment(judgment.submission, judgment.task, self.config)
        again.checks["judged_again_alone"] = judgment.alone_again[:500]
        try:
            refused = again.build_only()  # its objects are cached: a link, not a compile
            if refused is not None:
                return refused
            with share.alone(id(again), again.task.digest):
                verdict = again.run_built(pool)
            if again.alone_again:  # nothing else ran: a fault of the judge's own (fails closed)
                return failure(Status.RUNTIME_ERROR, f"judge error (judged alone, still: {again.alone_again[:300]})")
            return verdict
        finally:
            again.cleanup()


def _resolve_task(submission: Path, task: Task | None) -> tuple[Task | None, Verdict | None]:
    if task is not None:
        return task, None
    try:
        return load_task(submission / "model.py"), None
    except TaskError as exc:
        return None, failure(Status.TASK_ERROR, str(exc), stages=stage_outcomes("task"))


def _warm_pch(config: JudgeConfig) -> None:
    """Build the precompiled header of the binding units in the background (about 20 s on an H200 host,
    once per toolchain and flags); builds that need it before it is ready wait for it."""
    from cuda_agent.judge.trusted.build import ensure_pch

    with contextlib.suppress(Exception):  # builds report PCH trouble themselves and go on without it
        ensure_pch(config.build)
