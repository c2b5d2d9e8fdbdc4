"""Pre-started worker processes for one GPU, so a judgment never waits for `import torch`.

Starting a worker costs about 4 s on an H200 host (3 s to import torch, 1 s to create a CUDA context)
and the first CUDA profiler session another few seconds. The pool pays that ahead of time:

- **Candidate workers** are started and warmed (torch imported, CUDA context and profiler initialised)
  *before* any candidate code exists, each in its own sandbox and scratch folder. Each one serves
  exactly one candidate and is then killed: a CUDA context a candidate may have broken is never reused,
  and nothing a candidate leaves in its process can reach the next one.
- **Reference workers** run trusted task code only, so one is kept per task and reused by later
  judgments of that task (fresh secret seeds, fresh inputs, fresh weights every time). Any failure
  retires it.

GPU work of a warm-up never overlaps the timing phase of a judgment in this process (`quiet`, a
QuietWindow: warm-ups share it with each other, timing alone), so a spare's context creation cannot disturb
a measurement (`warm_beside_timing`, an experiment that is off, lifts this to measure what it costs and
what it saves).

A spare whose warm-up failed (its CUDA context refused while another candidate held the GPU's memory) is
closed and started again once earlier candidates are torn down (`_warmed_or_again`): a spare's failure
is never the next candidate's verdict.

A finished candidate is killed when its judgment ends and retired after its verdict is returned
(`retire`): its worker's exit (a CUDA context torn down), the sweep for processes it left and the removal
of its folder took 0.2-0.5 s of every warm judgment on an H200 (512 MB outputs the most). No candidate is
ever timed beside an earlier one's teardown (`settle` comes first); the next one may be loaded and verified
beside it, once every process of the earlier one is SIGKILLed (none of its code runs) and what the teardown
still holds leaves room twice over (`retirement_fits`).

Trust boundary: runs in the parent. Facts it establishes: each candidate worker is fresh (started before the
candidate existed, in its own sandbox and cgroup, killed afterwards), and the reference workers never load
candidate code. The candidate cannot forge them: it exists only inside a worker this module started.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import tempfile
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_agent.judge.common.channel import WorkerFailure, WorkerHandle
from cuda_agent.judge.common.procs import scrubbed_env
from cuda_agent.judge.trusted.cpu_placement import move_threads
from cuda_agent.judge.trusted.freeze import ProcessTree
from cuda_agent.judge.trusted.gpumem import leaves_room_twice, process_gpu_bytes
from cuda_agent.judge.trusted.lane_share import LaneShare, as_reader
from cuda_agent.judge.trusted.machine import kill_strays, machine_dir, note_worker, register_judge
from cuda_agent.judge.trusted.quiet_window import QuietWindow
from cuda_agent.judge.trusted.sandbox import candidate_sandbox, candidates_share_no_place
from cuda_agent.judge.trusted.slots import CandidateSlot, ReferenceSlot

REFERENCE_WORKER = "cuda_agent.judge.trusted.reference_worker"
CANDIDATE_WORKER = "cuda_agent.judge.candidate.worker"
WARM_TIMEOUT_S = 180.0
LIFECYCLE_KEPT = 512  # the last candidate workers' warm-up and retirement times a pool keeps


def pin_current_thread(cpus: frozenset[int] | None) -> None:
    """Restrict this thread (and the processes it starts, which inherit it) to `cpus`, if allowed."""
    if cpus:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setaffinity(0, cpus)


@dataclass
class WorkerPool:
    """Workers for one GPU (`device`: an index into the parent's visible GPUs, or None for the default)."""

    scratch_root: Path
    device: int | None = None
    # Candidate workers warmed ahead. One is enough for judgments one at a time; a batch's GPU lane takes
    # one every 2-3 s while a worker takes about 4 s to warm (its GPU part waits while timing runs), so
    # with one spare the lane waited 0.65 s a verdict (H200, 2026-12-04, judge_throughput batch 32).
    spare_candidates: int = 1
    # Reference workers kept (one per task, least recently used out): a miss costs 1.5-2 s of GPU-lane
    # time (task import, model set-up, first kernels); a kept one holds its CUDA context between uses.
    kept_references: int = 6
    # Reference workers warmed ahead for tasks not kept. A run over many tasks (the adversarial suite, a
    # KernelBench eval) meets a new task every few verdicts, while a worker takes about 3.7 s to warm: with
    # one spare the lane waited for it (`reference_wait`, 169 s of the suite's 1,235 s of lane, H100).
    spare_references: int = 1
    cpus: frozenset[int] | None = None  # where this GPU's workers run (kept apart from compiler jobs)
    warm_cpus: frozenset[int] | None = None  # where spares warm, if not `cpus` (cpu_placement.py, an experiment)
    replenish: bool = True  # start a replacement when a spare is taken (False for one-shot judging)
    quiet: QuietWindow = field(default_factory=QuietWindow)  # timing alone; warm-ups' GPU parts together
    # An experiment (JudgeConfig.warm_beside_timing, off): a spare's GPU warm-up without `quiet`. See
    # docs/design/throughput.md: on the H200 the time from one timing to the next never fell below ~1.4 s,
    # whatever the task, as if each verdict's replacement spare warmed its GPU part between two timings.
    warm_beside_timing: bool = False
    # Two judgments in flight (JudgeConfig.lane_depth 2, an experiment): set by JudgeService.judge_many.
    share: LaneShare | None = None

    def __post_init__(self) -> None:
        self._spares: queue.Queue[Future[CandidateSlot]] = queue.Queue()
        self._references: OrderedDict[str, ReferenceSlot] = OrderedDict()
        self._live_sessions: set[int] = set()  # session ids (= pids) of candidate workers alive now
        register_judge()  # before any worker exists: other judges' reapers must know its workers
        self._spare_references: deque[Future[ReferenceSlot]] = deque()
        self._lock = threading.Lock()
        self._closed = False
        self._starter = ThreadPoolExecutor(
            max_workers=2, thread_name_prefix="judge-warmup", initializer=pin_current_thread,
            initargs=(self.cpus,),
        )  # fmt: skip
        self._retirer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-retire")
        self._retiring: list[tuple[Future[None], int | None]] = []  # (teardown, its killed worker's pid)
        # The parts of the last candidates' retirements (CandidateSlot.close_seconds, and "strays": their
        # uid's escaped processes killed), for judge_throughput's account of the lane's time.
        self.retirements: deque[dict[str, float]] = deque(maxlen=LIFECYCLE_KEPT)
        # The parts of the last candidate workers' warm-ups: `import` (torch, CPU only), `quiet_wait` (for
        # timing to end), `gpu` (the GPU part's round trip) and the worker's own `cuda_init` and `profiler`.
        self.warmups: deque[dict[str, float]] = deque(maxlen=LIFECYCLE_KEPT)
        self.warm_retries: deque[dict[str, Any]] = deque(maxlen=LIFECYCLE_KEPT)  # spares that failed to warm

    # ---- environment of the workers ---------------------------------------------------------------
    def _env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = scrubbed_env(extra)
        if self.device is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.physical_gpu()
        return env

    def physical_gpu(self) -> str:
        """This pool's GPU as the machine names it: `device` (default 0) mapped through the parent's
        CUDA_VISIBLE_DEVICES."""
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = [s.strip() for s in visible.split(",")] if visible else []
        index = self.device or 0
        return ids[index] if index < len(ids) else str(index)

    # ---- candidates --------------------------------------------------------------------------------
    def start(self) -> None:
        """Begin warming the spares (call once the caller knows it will judge)."""
        with self._lock:
            while self._spares.qsize() < self.spare_candidates:
                self._spares.put(self._starter.submit(self._warm_new, self._new_candidate))
            while len(self._spare_references) < self.spare_references:
                self._spare_references.append(self._starter.submit(self._warm_new, self._new_reference))

    def take_candidate(self) -> CandidateSlot:
        """A warmed candidate process for exactly one candidate; a replacement starts warming at once."""
        return self.take_candidate_later().result()

    def take_candidate_later(self) -> Future[CandidateSlot]:
        """`take_candidate` without the wait: the slot, once warm. A caller that may wait for other work
        first (the reference's preparation) takes it early, so the two waits overlap."""
        with self._lock:
            if self._spares.empty():
                self._spares.put(self._starter.submit(self._warm_new, self._new_candidate))
            future = self._spares.get()
            if self.replenish and not self._closed:
                self._spares.put(self._starter.submit(self._warm_new, self._new_candidate))
        return future

    def _new_candidate(self) -> CandidateSlot:
        root = Path(tempfile.mkdtemp(prefix="cuda-agent-candidate-", dir=self.scratch_root))
        folder = root / "candidate"
        out_dir = folder / "out"
        out_dir.mkdir(parents=True)
        sandbox = candidate_sandbox()
        # A uid of its own (with private places) that this judge used before: whatever still runs as it goes
        # first. Never with the shared sandbox user, whose other processes are the live spares.
        if sandbox.uid is not None and sandbox.places is not None:
            kill_strays(sandbox.uid, set())
        sandbox.give(folder)
        # With private places the candidate reaches its folder through its own mount namespace, and no
        # other candidate may reach it at all (sandbox.py); without them it needs the way through `root`.
        root.chmod(0o700 if sandbox.places is not None else 0o755)
        kept = sandbox.own(folder, root, self.scratch_root)
        env = self._env({"HOME": str(folder), "TMPDIR": str(folder), **kept})
        worker = WorkerHandle(
            CANDIDATE_WORKER, log_path=root / "candidate.log", env=env, cwd=folder, preexec=sandbox.preexec()
        )
        note_worker(worker.pid)  # for the next judge's sweep, should this one die without closing it
        with self._lock:
            self._live_sessions.add(worker.pid)
        # Into a cgroup of its own (where the judge may create one) before any candidate code exists.
        tree = ProcessTree.attach(worker.pid, folder)
        note_worker(cgroup=tree.cgroup)
        slot = CandidateSlot(worker, root, folder, out_dir, sandbox, tree, retire=self._retire_candidate)
        slot.warm_error = self._warm(worker, self.warmups)
        return slot

    def _retire_candidate(self, slot: CandidateSlot) -> None:
        """After a candidate: kill whatever its uid still runs outside the live spares.

        A candidate that escaped its process group (setsid, a double fork) would otherwise outlive it and
        could reach later candidates (world-readable files it writes, a later candidate given its uid)."""
        with self._lock:
            self._live_sessions.discard(slot.worker.pid)
            live = set(self._live_sessions)
        began = time.monotonic()
        if slot.sandbox.uid is not None:
            kill_strays(slot.sandbox.uid, live)
        self.retirements.append({**slot.close_seconds, "strays": time.monotonic() - began})

    # ---- references --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def reference(self, task_digest: str) -> Iterator[ReferenceSlot]:
        """The reference worker kept for this task (or a fresh one). It is retired if the body raises
        or marks it broken; otherwise kept for the next judgment of the task."""
        with self._lock:
            slot = self._references.pop(task_digest, None)
            if slot is None:
                spares = self._spare_references
                future = spares.popleft() if spares else self._starter.submit(self._warm_new, self._new_reference)
                if self.replenish and not self._closed:
                    spares.append(self._starter.submit(self._warm_new, self._new_reference))
            else:
                future = None
        if future is not None:
            slot = self._warmed_or_again(future.result(), self._new_reference)
        assert slot is not None
        broken = True
        try:
            yield slot
            broken = False
        except BaseException as exc:
            # A verdict against the candidate (`keeps_workers`) leaves the reference usable; a judge
            # error may have left it mid-call, so it goes.
            broken = not getattr(exc, "keeps_workers", False)
            raise
        finally:  # at depth 2 a reader: the worker's end of a judgment frees GPU memory, never beside a timing
            with self.quiet.warming() if self.share is not None else contextlib.nullcontext():
                broken = broken or slot.broken or slot.warm_error is not None or slot.worker.process.poll() is not None
                broken = broken or (not self._closed and not self._ended(slot))
                if broken or self._closed:
                    slot.close()
                else:
                    self._keep(task_digest, slot)

    def _warmed_or_again(self, slot: Any, start: Callable[[], Any]) -> Any:
        """`slot`, or, where its warm-up failed, a worker started again once earlier candidates are torn down.
        Spares warm while other candidates run: one that filled the GPU's memory (raw cudaMalloc) made a
        spare's CUDA context fail, and the next judgment, of another candidate, got -1 for it (suite, H100,
        2026-12-07). Only a second failure reaches the verdict, as the judge's (train/unjudged.py masks it)."""
        if self._to_lane_cpus(slot).warm_error is None:
            return slot
        first = slot.warm_error
        if isinstance(slot, CandidateSlot):
            self.retire(slot)
        else:
            slot.close()
        self.settle()
        again = start()
        self.warm_retries.append({"first": first[:300], "again": again.warm_error is None})
        if again.warm_error is not None:
            again.warm_error = f"{again.warm_error[:400]} (started twice; the first try: {first[:200]})"
        return again  # started from the lane's thread: on the lane's CPUs

    def _warm_new(self, start: Callable[[], Any]) -> Any:
        """A spare started on the starter's thread, pinned first to where spares warm now."""
        pin_current_thread(self.warm_cpus or self.cpus)
        return start()

    def _to_lane_cpus(self, slot: Any) -> Any:
        """A spare warmed on `warm_cpus`, moved to this lane's CPUs before it serves. Where that fails, spares
        warm on the lane's CPUs from now on and this one is started again there (`_warmed_or_again`)."""
        elsewhere = slot.warm_error is None and self.warm_cpus and self.cpus and self.warm_cpus != self.cpus
        if elsewhere and (why := move_threads(slot.worker.pid, self.cpus)) is not None:
            self.warm_cpus = None
            slot.warm_error = f"it could not be moved to its lane's CPUs: {why}"
        return slot

    def candidate_warmed_or_again(self, slot: CandidateSlot) -> CandidateSlot:
        """A taken candidate slot, started again where its warm-up failed (see `_warmed_or_again`)."""
        return self._warmed_or_again(slot, self._new_candidate)

    @staticmethod
    def _ended(slot: ReferenceSlot) -> bool:
        """Have the reference worker drop the judgment's state before it is kept (see end_judgment), or,
        where its preparation serves the next judgment of the task too (`slot.group`), only what belonged
        to the candidate (end_candidate)."""
        try:
            if slot.group is not None and slot.group.reusable():
                return bool(slot.worker.call("end_candidate", 60).get("ok"))
            slot.group = None
            return bool(slot.worker.call("end_judgment", 60).get("ok"))
        except Exception:  # a worker that cannot do this much is not kept
            return False

    def candidates_share_no_place(self) -> bool:
        """Whether candidates judged one after another on this pool share no writable place (private
        world-writable folders and IPC, a sandbox user apart from the judge's; trusted/sandbox.py): the
        condition for one reference preparation to serve a group of them (decide/reference_group.py)."""
        known = candidates_share_no_place()  # None until the first candidate sandbox was probed
        if known is None:
            candidate_sandbox()
            known = candidates_share_no_place()
        return bool(known)

    # ---- retirement after the verdict -------------------------------------------------------------------
    def retire(self, slot: CandidateSlot) -> None:
        """A finished candidate: killed now (no code of it runs once this returns), reaped and swept off the
        caller's path. Whether NVML listed its worker just before the kill is kept: only then can
        `retirement_fits` see what its teardown still holds."""
        if (share := self.share) is not None:  # depth 2: no teardown while another candidate is timed
            def kill_and_close() -> None:  # a reader (retire_later): frozen by writers until killed
                slot.kill()
                share.drop_candidate(slot.worker.pid)
                slot.close()

            self.retire_later(kill_and_close)
            return
        seen = process_gpu_bytes(slot.worker.pid) is not None
        slot.kill()
        self.retire_later(slot.close, dying=slot.worker.pid if seen else None)

    def retire_later(self, cleanup: Callable[[], None], dying: int | None = None) -> None:
        """Run `cleanup` (a finished candidate's teardown) off the caller's path; `settle` waits for it.
        `dying`: the pid of an already killed worker whose GPU memory NVML can see (see `retire`). At depth
        2 a teardown is a reader of the GPU: never while another candidate is timed."""
        if self.share is not None:
            cleanup = as_reader(self.quiet, cleanup)
        with self._lock:
            if self._closed:
                future = None
            else:
                future = self._retirer.submit(cleanup)
                self._retiring = [(f, pid) for f, pid in self._retiring if not f.done()] + [(future, dying)]
        if future is None:
            cleanup()

    def settle(self) -> None:
        """Wait until every retirement handed over so far has ended (their errors are not the caller's:
        a teardown that fails has already killed what it could)."""
        with self._lock:
            pending, self._retiring = self._retiring, []
        for future, _ in pending:
            with contextlib.suppress(Exception):
                future.result()

    def retirement_fits(self) -> bool:
        """Whether the next candidate may be loaded and verified while earlier ones are still being torn
        down (never timed: `settle` comes first). Only where every one of them was killed by `retire` and
        seen by NVML, and what their CUDA contexts still hold is at most half the free memory of their GPU:
        a candidate like the last one then fits twice over, so the teardown cannot make an honest
        candidate or the reference run out of memory. Saves the reap (about 0.2 s a verdict, H200)."""
        with self._lock:
            pending = [(f, pid) for f, pid in self._retiring if not f.done()]
        if not pending:
            return True
        if any(pid is None for _, pid in pending):
            return False  # an unused spare closed, or a worker NVML could not see: wait for it
        return leaves_room_twice(pid for _, pid in pending if pid is not None)

    @contextlib.contextmanager
    def gpu_lock(self, waits: dict[str, float] | None = None, beside_retirement: bool = False,
                 reading: bool = False, preemptible: bool = False) -> Iterator[None]:  # fmt: skip
        """Exclusive use of this GPU for verification and timing, across every judge process on the
        machine (a file lock): a measurement taken while another judge runs kernels would be noise.
        Granted once this pool's earlier candidates are fully retired, or, with `beside_retirement` (work
        that is not timed), once they are killed and `retirement_fits`. `waits` (a judgment's stage times)
        gets the seconds spent waiting for the retirements ("settle_wait") and for the lock held by another
        judge ("gpu_lock_wait"): the lane's time outside its stages (docs/design/throughput.md).
        At depth 2 (`share`) the file lock is shared by this process's lanes, and `reading` work (not timed)
        runs beside the other judgment's, never beside a timing (`quiet`); the caller takes the writer.
        `preemptible` reading (every process of it registered with the share) is frozen by a writer rather
        than waited for, where the share preempts (`QuietWindow.reading`)."""
        began = time.monotonic()
        if not (beside_retirement and self.retirement_fits()):
            self.settle()
        settled = time.monotonic()

        def waited() -> None:
            if waits is not None:
                waits["settle_wait"] = waits.get("settle_wait", 0.0) + settled - began
                waits["gpu_lock_wait"] = waits.get("gpu_lock_wait", 0.0) + time.monotonic() - settled

        if self.share is not None:
            side = self.quiet.reading() if preemptible and self.share.preempt else self.quiet.warming()
            with self.share.machine_hold(), side if reading else contextlib.nullcontext():
                waited()
                yield
            return
        with open(self.gpu_lock_path(), "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            waited()
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def gpu_lock_path(self) -> Path:
        """The file every judge process on this machine locks for this GPU."""
        locks = machine_dir() / "locks"
        locks.mkdir(exist_ok=True)
        return locks / f"gpu-{self.physical_gpu()}.lock"

    def _keep(self, task_digest: str, slot: ReferenceSlot) -> None:
        with self._lock:
            self._references[task_digest] = slot
            while len(self._references) > self.kept_references:
                _, old = self._references.popitem(last=False)
                old.close()

    def _new_reference(self) -> ReferenceSlot:
        root = Path(tempfile.mkdtemp(prefix="cuda-agent-reference-", dir=self.scratch_root))
        worker = WorkerHandle(REFERENCE_WORKER, log_path=root / "reference.log", env=self._env(), cwd=root)
        note_worker(worker.pid)
        slot = ReferenceSlot(worker, root)
        slot.warm_error = self._warm(worker)
        return slot

    def _warm(self, worker: WorkerHandle, times: deque[dict[str, float]] | None = None) -> str | None:
        """Import torch, create the CUDA context, initialise the profiler. Errors are kept, not raised:
        the judgment that takes the slot reports them as a verdict. `times` gets the parts' seconds."""
        try:
            began = time.monotonic()
            reply = worker.call("warm", WARM_TIMEOUT_S, gpu=False)  # waits out `import torch` (CPU only)
            if reply.get("ok"):
                imported = time.monotonic()
                with contextlib.nullcontext() if self.warm_beside_timing else self.quiet.warming():
                    entered = time.monotonic()
                    reply = worker.call("warm", WARM_TIMEOUT_S, gpu=True)
                parts = reply.get("seconds") if isinstance(reply.get("seconds"), dict) else {}
                if times is not None:
                    times.append({"import": imported - began, "quiet_wait": entered - imported,
                                  "gpu": time.monotonic() - entered,
                                  **{k: float(v) for k, v in parts.items() if isinstance(v, int | float)}})  # fmt: skip
        except WorkerFailure as exc:
            return f"{exc}: {exc.log_tail[-500:]}"
        if not reply.get("ok"):
            return f"{reply.get('error')}: {reply.get('message', '')[:500]}"
        return None

    def close(self) -> None:
        self.settle()
        with self._lock:
            self._closed = True
            futures = list(self._spares.queue)
            futures.extend(self._spare_references)
            references = list(self._references.values())
            self._references.clear()
        for slot in references:
            slot.close()
        self._starter.shutdown(wait=True, cancel_futures=True)
        self._retirer.shutdown(wait=True)
        for future in futures:
            if future.done() and not future.cancelled() and future.exception() is None:
                future.result().close()
