"""QuietWindow (trusted/quiet_window.py): the pool's timing excludes workers' GPU warm-ups, warm-ups share
the GPU with each other, and a waiting timing is not held back by warm-ups that arrive after it. Real
threads; each wait is bounded, so a broken window fails the test instead of hanging it."""

from __future__ import annotations

import threading
import time

import pytest

from cuda_agent.judge.trusted.quiet_window import QuietWindow

WAIT_S = 5.0


def test_two_warm_ups_are_in_their_gpu_parts_at_once() -> None:
    window = QuietWindow()
    together = threading.Barrier(2, timeout=WAIT_S)  # broken (an error) unless both are inside at once
    errors: list[BaseException] = []

    def warm() -> None:
        try:
            with window.warming():
                together.wait()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=warm) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(2 * WAIT_S)
    assert errors == [] and window.warming_now == 0


def test_timing_waits_for_the_warm_up_under_way_and_keeps_new_ones_out() -> None:
    """A warm-up is inside; timing asks, then another warm-up asks: timing goes next and alone, and the
    late warm-up starts only after it (a plain lock let the late one in first)."""
    window = QuietWindow()
    events: list[str] = []
    first_inside, let_first_go = threading.Event(), threading.Event()

    def first() -> None:
        with window.warming():
            first_inside.set()
            assert let_first_go.wait(WAIT_S)
            events.append("first warm-up ends")

    def timing() -> None:
        with window.timing():
            events.append("timing starts")
            assert window.warming_now == 0
            time.sleep(0.05)
            events.append("timing ends")

    def late() -> None:
        with window.warming():
            events.append("late warm-up starts")
            assert not window.timing_now

    a = threading.Thread(target=first)
    a.start()
    assert first_inside.wait(WAIT_S)
    t = threading.Thread(target=timing)
    t.start()
    _until(lambda: window._timing_waits == 1)
    b = threading.Thread(target=late)
    b.start()
    time.sleep(0.05)  # the late warm-up has asked and must still be waiting
    assert events == []
    let_first_go.set()
    for thread in (a, t, b):
        thread.join(WAIT_S)
    assert events == ["first warm-up ends", "timing starts", "timing ends", "late warm-up starts"]


@pytest.mark.parametrize("kind", ["warming", "reading"])
def test_no_reader_starts_while_timing_runs(kind: str) -> None:
    """Neither a warm-up nor a reader a writer would freeze (lane_preempt) starts during a timing."""
    window = QuietWindow()
    entered = threading.Event()

    def read() -> None:
        with getattr(window, kind)():
            entered.set()

    with window.timing():
        thread = threading.Thread(target=read)
        thread.start()
        assert not entered.wait(0.3), f"a {kind} section started while a candidate was timed"
    assert entered.wait(WAIT_S)
    thread.join(WAIT_S)
    assert window.warming_now == 0 and window.reading_now == 0


def test_an_error_inside_leaves_the_window_open() -> None:
    window = QuietWindow()
    for part in (window.timing, window.warming):
        with pytest.raises(RuntimeError), part():
            raise RuntimeError("a failed warm-up or timing")
    with window.timing():
        assert window.warming_now == 0


def _until(condition, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)
