"""Two judgments in flight on one GPU's lane (`JudgeConfig.lane_depth` 2, an experiment, off by default).

A serial lane leaves the GPU idle while one judgment's verification and preparation wait on host work,
and no lane can overlap them with its own timing (docs/design/throughput.md, "Two judgments on one GPU's
lane"). At depth 2 a second judgment, of another task, is prepared, loaded and verified beside the first:
those are *readers* of the GPU (the pool's `QuietWindow`, shared with spares' warm-ups), and a timing
stage is its one *writer*, alone and preferred. What this module keeps, so that nothing a second candidate
does can reach a measurement or a sibling's reward:

- **Every candidate that may run is known** (`add_candidate` at its load, `drop_candidate` once its tree
  is killed), and a writer freezes every one but its own (`others_frozen`): a frozen tree runs no code,
  so work of it can only be what it queued before, which the writer's drain must see end.
- **A judgment waits to enter** while one is judged alone, while another of its task is in flight (one
  reference worker answers one judgment at a time), and while the others' workers hold more than half the
  free memory (`admit`, gpumem.leaves_room_twice): a candidate like theirs then still fits.
- **Failures beside another are judged again alone** (`alone`): a judgment that ran out of memory, timed
  out or found the GPU busy while another was in flight has no verdict; it is judged again with every
  permit, so a candidate can never lower a sibling's reward (GRPO's advantages are relative in a group).
  `alone` takes all permits at once: two such judgments cannot each hold one and wait for the other.
- **With `preempt`** (`JudgeConfig.lane_preempt`), a writer does not wait for the other judgment's
  preparation, load or verification to end (`QuietWindow.reading`): it freezes that judgment's reference
  worker too (`add_reference`), mid-call, and its drain waits for the work they had queued. Their replies'
  time limits do not count the time they were held (`PauseClock`). Teardowns and warm-ups, which cannot be
  frozen, are still waited for.
- **One lock for the machine**: the lanes of this process share the file lock other judge processes wait
  on (`machine_hold`), held while any of them is in a GPU section.

Trust boundary: runs in the parent, between the judge's own threads; candidate code never takes it. It
establishes one fact: while a candidate of this pool is timed, every other candidate of this pool is frozen.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from cuda_agent.judge.common.channel import PauseClock, WorkerHandle
from cuda_agent.judge.trusted.freeze import FreezeFailed, ProcessTree
from cuda_agent.judge.trusted.gpumem import gpu_bytes_and_free
from cuda_agent.judge.trusted.quiet_window import QuietWindow

ENTRY_POLL_S = 0.05  # how often a waiting judgment looks again at the others' memory


def depth_refused(shares_no_place: bool) -> str:
    """Why a pool cannot run two judgments at once here ("" where it can)."""
    if not shares_no_place:
        return "candidates would share a writable place (no private uid, namespaces and folders)"
    if gpu_bytes_and_free([]) is None:
        return "NVML cannot name each process's GPU memory"
    return ""


def as_reader(window: QuietWindow, work: Callable[[], None]) -> Callable[[], None]:
    """`work` (a teardown) run as a reader of `window`: never while a candidate is timed."""

    def read() -> None:
        with window.warming():
            work()

    return read


class JudgeAlone(Exception):
    """Raised inside a judgment at depth 2 when what it saw may be another candidate's doing: it is judged
    again alone, and this reason goes into the second verdict's checks."""


@dataclass
class Flight:
    """One judgment in flight on the lane."""

    key: int
    task_digest: str
    pids: set[int] = field(default_factory=set)  # its reference and candidate workers (memory admission)
    beside_another: bool = False  # another judgment was in flight at some point of this one
    alone: bool = False  # judged with every permit (`LaneShare.alone`): nothing else enters meanwhile
    pauses: PauseClock = field(default_factory=PauseClock)  # time its workers were held frozen (preempt)


class LaneShare:
    """The depth-2 lane's bookkeeping for one GPU (see the module docstring)."""

    def __init__(self, depth: int, lock_path: Path, preempt: bool = False) -> None:
        self.depth = depth
        self.lock_path = lock_path
        self.preempt = preempt  # a writer freezes the others' readers instead of waiting for them
        self._changed = threading.Condition()
        self._flights: dict[int, Flight] = {}
        self._candidates: dict[int, tuple[int, ProcessTree]] = {}  # worker pid -> (its judgment, its tree)
        self._references: dict[int, tuple[int, ProcessTree]] = {}  # the same, for reference workers (preempt)
        self._alone_waiting = 0
        self._alone = False
        self._holders = 0
        self._handle: IO[str] | None = None
        self._hold_lock = threading.Lock()

    # ---- entering ------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def judgment(self, key: int, task_digest: str, admit: Callable[[set[int]], bool]) -> Iterator[Flight]:
        """A judgment's time on the lane: waits for a permit, its task to be free and `admit(other pids)`."""
        with self._changed:
            while True:
                others = list(self._flights.values())
                if (not self._alone and not self._alone_waiting and len(others) < self.depth
                        and all(f.task_digest != task_digest for f in others)
                        and (not others or admit(set().union(*(f.pids for f in others))))):  # fmt: skip
                    break
                self._changed.wait(ENTRY_POLL_S)
            flight = self._flights[key] = Flight(key, task_digest, beside_another=bool(others))
            for other in others:
                other.beside_another = True
        try:
            yield flight
        finally:
            with self._changed:
                self._flights.pop(key, None)
                self._changed.notify_all()

    @contextlib.contextmanager
    def alone(self, key: int, task_digest: str) -> Iterator[Flight]:
        """Every permit at once: no other judgment enters or is in flight until this one ends."""
        with self._changed:
            self._alone_waiting += 1
            try:
                self._changed.wait_for(lambda: not self._alone and not self._flights)
            finally:
                self._alone_waiting -= 1
            self._alone = True
            flight = self._flights[key] = Flight(key, task_digest, alone=True)
        try:
            yield flight
        finally:
            with self._changed:
                self._alone = False
                self._flights.pop(key, None)
                self._changed.notify_all()

    def note_worker(self, key: int, pid: int) -> None:
        """A worker of judgment `key` (its reference or candidate): counted in the others' admission."""
        with self._changed:
            if key in self._flights:
                self._flights[key].pids.add(pid)

    def is_alone(self, key: int) -> bool:
        with self._changed:
            flight = self._flights.get(key)
            return flight is not None and flight.alone

    def task_in_flight(self, task_digest: str) -> bool:
        with self._changed:
            return any(f.task_digest == task_digest for f in self._flights.values())

    def held_s(self, key: int) -> float:
        """Seconds judgment `key`'s workers have been held frozen by others' timings so far (preempt)."""
        with self._changed:
            flight = self._flights.get(key)
        return flight.pauses.total() if flight is not None else 0.0

    def beside_another(self, key: int) -> bool:
        with self._changed:
            flight = self._flights.get(key)
            return flight is not None and flight.beside_another

    # ---- candidates that may run ----------------------------------------------------------------------
    def add_candidate(
        self, key: int, pid: int, tree: ProcessTree, handle: WorkerHandle | None = None
    ) -> None:
        """From before the load of a candidate until its tree is killed, other judgments' timings freeze it.
        `handle`: its channel, whose calls then do not count the time it is held frozen (`preempt`)."""
        with self._changed:
            self._candidates[pid] = (key, tree)
            flight = self._flights.get(key)
            if handle is not None and flight is not None and self.preempt:
                handle.pauses = flight.pauses
        self.note_worker(key, pid)

    def add_reference(self, key: int, handle: WorkerHandle) -> None:
        """With `preempt`, judgment `key`'s reference worker, from before its preparation until
        `drop_reference`: other judgments' timings freeze it, mid-call if it is in one. (Without `preempt`
        they wait for its GPU work instead, and it is not registered.) Its memory is counted by the caller's
        `note_worker`, which every depth-2 judgment makes for its reference."""
        with self._changed:
            flight = self._flights.get(key)
            if not self.preempt or flight is None:
                return
            self._references[handle.pid] = (key, ProcessTree(handle.pid))
            handle.pauses = flight.pauses

    def drop_reference(self, handle: WorkerHandle) -> None:
        """The judgment is done with the reference worker (it goes back to the pool, then to the next
        judgment of its task, which registers it again)."""
        with self._changed:
            self._references.pop(handle.pid, None)
            handle.pauses = None

    def drop_candidate(self, pid: int) -> None:
        with self._changed:
            self._candidates.pop(pid, None)

    @contextlib.contextmanager
    def others_frozen(self, key: int) -> Iterator[int]:
        """Every candidate tree but judgment `key`'s own frozen for the block, and with `preempt` every other
        judgment's reference worker; yields how many. Without `preempt` the caller holds the writer after
        every reader ended, so none of them is inside a call; with it they may be, and their judgments'
        `PauseClock`s run meanwhile. A tree that cannot be frozen is `JudgeAlone`."""
        with self._changed:
            held = [(owner, tree) for owner, tree in (*self._candidates.values(),
                    *(self._references.values() if self.preempt else ())) if owner != key]  # fmt: skip
            trees = [tree for _, tree in held]
            # The clocks of the judgments whose workers are stopped here, and no others: `held_frozen` is
            # then time a worker of the judgment really stood still.
            owners = {owner for owner, _ in held}
            clocks = [f.pauses for f in self._flights.values() if f.key in owners] if self.preempt else []
        for clock in clocks:
            clock.begin()  # before the first stop: a call's limit never counts a held worker's time
        frozen: list[ProcessTree] = []
        try:
            for tree in trees:
                try:
                    tree.freeze()
                except FreezeFailed as exc:
                    raise JudgeAlone(f"another candidate on this GPU could not be frozen: {exc}") from None
                frozen.append(tree)
            yield len(frozen)
        finally:
            for tree in frozen:
                tree.thaw()
            for clock in clocks:
                clock.end()

    # ---- the machine's lock -------------------------------------------------------------------------
    @contextlib.contextmanager
    def machine_hold(self) -> Iterator[None]:
        """The file lock other judge processes on this machine wait on, shared by this process's lanes:
        taken by the first of them to enter a GPU section, given back by the last to leave."""
        with self._hold_lock:
            if self._holders == 0:
                handle = open(self.lock_path, "a")  # noqa: SIM115 - held across calls, closed by the last
                fcntl.flock(handle, fcntl.LOCK_EX)
                self._handle = handle
            self._holders += 1
        try:
            yield
        finally:
            with self._hold_lock:
                self._holders -= 1
                if self._holders == 0 and self._handle is not None:
                    handle, self._handle = self._handle, None
                    fcntl.flock(handle, fcntl.LOCK_UN)
                    handle.close()

    @property
    def in_flight(self) -> int:
        with self._changed:
            return len(self._flights)
