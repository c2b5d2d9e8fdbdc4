"""`QuietWindow`: a timed window and the worker warm-ups' GPU parts never overlap; warm-ups overlap each other.

A spare worker's GPU warm-up (its CUDA context, then its first CUDA profiler session: about 1.2 s on an
H100, nearly all CUPTI's start-up) is kept out of the timing stage, so that it cannot disturb a
measurement (pool.py). Under a plain lock the warm-ups also excluded *each other*, and the lock was not
fair: two spares waiting while a candidate was timed went one after the other, and the next timing could
wait for both, 2.3 s, where the batch's lane spends about 2.6 s a verdict (docs/design/throughput.md,
`quiet_wait` 0.58 s at the median, H100, 2026-12-06). Here the warm-ups are readers and timing the one
writer:

- warm-ups run together (each in its own process; nothing of one is timed while another starts);
- timing starts once no warm-up is in its GPU part, and none starts while timing runs;
- a timing that is waiting stops new warm-ups from starting, so a stream of warm-ups cannot hold it back:
  it waits at most for the warm-ups already under way.

A third kind, `reading` (depth 2 with `lane_preempt`, trusted/lane_share.py): work of another judgment whose
every process the writer freezes on entry (its reference's preparation, its candidate's load and
verification). It waits like a warm-up to start, but the writer does not wait for it to end: it is stopped
where it stands and its queued GPU work drained, so a timing never waits for a sibling's verification.

Trust boundary: runs in the parent, between the judge's own threads. It establishes one fact: no worker of
this pool warms its GPU part during a timed window of this pool. Candidate code never takes it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class QuietWindow:
    """Readers (`warming`) share; the writer (`timing`) is alone and preferred."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._counts = {False: 0, True: 0}  # readers under way: warm-ups (waited for), `reading` (frozen)
        self._timing = False
        self._timing_waits = 0

    @contextlib.contextmanager
    def timing(self, every_reader: bool = False) -> Iterator[None]:
        """The timed window: waits for the warm-ups under way, and lets no new one start until it ends.
        `every_reader`: waits for the `reading` ones too (a writer whose freeze left the GPU busy)."""
        with self._changed:
            self._timing_waits += 1
            try:
                self._changed.wait_for(
                    lambda: (
                        not self._timing
                        and self._counts[False] == 0
                        and not (every_reader and self._counts[True])
                    )
                )
            finally:
                self._timing_waits -= 1
            self._timing = True
        try:
            yield
        finally:
            with self._changed:
                self._timing = False
                self._changed.notify_all()

    def warming(self) -> contextlib.AbstractContextManager[None]:
        """A worker's GPU warm-up: waits while a timing runs or waits, then runs beside other warm-ups."""
        return self._reader(frozen_by_writer=False)

    def reading(self) -> contextlib.AbstractContextManager[None]:
        """GPU work the writer freezes instead of waiting for (the module docstring): starts only while no
        timing runs or waits, like a warm-up, and does not hold a timing back once under way."""
        return self._reader(frozen_by_writer=True)

    @contextlib.contextmanager
    def _reader(self, frozen_by_writer: bool) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._timing and self._timing_waits == 0)
            self._counts[frozen_by_writer] += 1
        try:
            yield
        finally:
            with self._changed:
                self._counts[frozen_by_writer] -= 1
                self._changed.notify_all()

    @property
    def reading_now(self) -> int:
        """Preemptible readers under way now (for tests and accounts)."""
        return self._counts[True]

    @property
    def warming_now(self) -> int:
        """Warm-ups in their GPU part now (for tests and accounts)."""
        return self._counts[False]

    @property
    def timing_now(self) -> bool:
        """Whether a timed window is open now."""
        return self._timing
