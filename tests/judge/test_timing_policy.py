"""The parent's half of the timing protocol (decide/stats.py, candidate/sampler.py), on plain numbers: the host-clock bound, the
baseline spread, the reward margin, the pad length."""

from __future__ import annotations

import random
import statistics

import pytest

from cuda_agent.judge.candidate import kernel_trace, pad, sampler
from cuda_agent.judge.candidate.sampler import pad_for
from cuda_agent.judge.decide import stats
from cuda_agent.judge.decide.reward import milestone_reward
from cuda_agent.judge.decide.stats import (
    HOST_MARGIN_FLOOR_MS,
    HostClock,
    baseline_spread,
    reward_threshold,
    round_time,
)


def _reference_rounds(seed: int = 0, overhead: float = 0.08, jitter: float = 0.002) -> list:
    """(parent wall, setup, samples) of honest reference rounds: 10 calls of 0.05 ms each."""
    rng = random.Random(seed)
    rounds = []
    for _ in range(12):
        samples = [0.05 + rng.gauss(0, 0.0005) for _ in range(10)]
        setup = rng.uniform(0.2, 2.0)  # copies to fresh memory: excluded from the per-call overhead
        wall = setup + sum(s + overhead + rng.gauss(0, jitter) for s in samples)
        rounds.append((wall, setup, samples))
    return rounds


def test_host_clock_learns_the_overhead_and_a_tight_margin() -> None:
    clock = HostClock.from_reference(_reference_rounds())
    assert clock.overhead_ms == pytest.approx(0.08, abs=0.003)
    # A steady reference (microseconds of jitter) leaves the floor: what two processes running the same
    # loop differ by, not the old 50 us + 50% of the overhead.
    assert clock.margin_ms == pytest.approx(HOST_MARGIN_FLOOR_MS)


def test_a_jittery_reference_widens_the_margin_beyond_the_floor() -> None:
    clock = HostClock.from_reference(_reference_rounds(jitter=0.15))
    assert clock.margin_ms > 1.5 * HOST_MARGIN_FLOOR_MS


def test_host_clock_charges_work_that_escaped_the_events() -> None:
    clock = HostClock.from_reference(_reference_rounds())
    honest = [0.05] * 10
    honest_wall = sum(s + 0.08 for s in honest)
    assert round_time(honest, honest_wall, clock) == (pytest.approx(0.05), False)
    # Same reported samples, but each call left 20 us of work outside the events (a forged sampler, a
    # second context): the parent's clock sees it and charges it.
    escaped_wall = honest_wall + 10 * 0.05
    charged, by_clock = round_time(honest, escaped_wall, clock)
    assert by_clock and charged >= 0.05 + 0.05 - clock.margin_ms - 1e-9


def test_host_clock_without_reference_rounds_never_binds() -> None:
    clock = HostClock.from_reference([])
    assert round_time([1.0, 1.0], 100.0, clock) == (1.0, False)


def test_baseline_spread_is_the_relative_iqr_of_round_medians() -> None:
    assert baseline_spread([1.0] * 8) == 0.0
    spread = baseline_spread([1.0, 1.0, 1.1, 1.1, 0.9, 0.9, 1.0, 1.0])
    assert spread == pytest.approx(0.05)
    assert baseline_spread([1.0]) == 0.0


def test_reward_threshold_adds_the_spread_beyond_a_quiet_gpus_as_margin() -> None:
    assert reward_threshold(0.0) == pytest.approx(1.05)
    assert reward_threshold(stats.QUIET_SPREAD) == pytest.approx(1.05)  # a quiet GPU's jitter: no margin
    assert reward_threshold(0.04) == pytest.approx(1.05 * (1.04 - stats.QUIET_SPREAD))
    assert reward_threshold(5.0) == pytest.approx(1.05 * (1 + stats.MAX_SPREAD_MARGIN))  # capped
    assert reward_threshold(-1.0) == pytest.approx(1.05)


def test_reward_with_margin_needs_more_than_the_spread() -> None:
    # The case: 1.08x vs compile is "more than 5% faster" by the bare rule, but the compile
    # baseline's windows spread 4%: the margin withholds the 3 (it would flip with the next window).
    assert milestone_reward(True, 1.5, 1.08) == 3
    assert milestone_reward(True, 1.5, 1.08, compile_threshold=reward_threshold(0.04)) == 2
    assert milestone_reward(True, 1.5, 1.10, compile_threshold=reward_threshold(0.04)) == 3
    assert milestone_reward(True, 1.055, 1.5, eager_threshold=reward_threshold(0.02)) == 1
    # A threshold below the base never lowers the bar.
    assert milestone_reward(True, 1.04, 1.04, eager_threshold=1.0, compile_threshold=1.0) == 1


def test_pad_covers_the_host_enqueue_time_within_bounds() -> None:
    assert pad_for(0.0) == pad.PAD_MIN_MS
    assert pad_for(0.1) == pytest.approx(pad.PAD_FACTOR * 0.1 + pad.PAD_EXTRA_MS)
    assert pad_for(0.1) > 0.1
    assert pad_for(100.0) == pad.PAD_MAX_MS


def test_round_time_is_the_same_rule_for_every_contender() -> None:
    clock = HostClock.from_reference(_reference_rounds())
    rng = random.Random(1)
    for _ in range(50):
        samples = [0.05 + rng.gauss(0, 0.0005) for _ in range(10)]
        wall = sum(s + 0.08 + rng.gauss(0, 0.002) for s in samples)
        t, by_clock = round_time(samples, wall, clock)
        assert t == pytest.approx(statistics.fmean(samples)) and not by_clock  # v6: the round's work per call


class _Event:
    def elapsed_time(self, other: object) -> float:
        return 0.05


def _bare_sampler(loop) -> sampler.Sampler:
    """A Sampler with one prepared call and `loop` as its timed loop (no GPU: the loop is the test's)."""
    made = sampler.Sampler.__new__(sampler.Sampler)
    made.pad_ms, made.cover_ms = 0.1, 0.0
    made._prepared = sampler._Round(1, [[_Event(), _Event(), _Event()] for _ in range(3)], 0.0)
    made.arg_sets, made._round_copies = [[]], {}
    made.torch = type("T", (), {"cuda": type("C", (), {"synchronize": staticmethod(lambda: None)})})
    made._timed_loop = loop  # type: ignore[method-assign]
    return made


def test_no_garbage_collection_inside_a_timed_loop() -> None:
    """A generation-2 collection costs milliseconds of one round's host wall, in whichever process: the
    timed loop runs with the collector off, and it is on again afterwards, also when the loop raises."""
    import gc

    seen: list[bool] = []

    def loop(plan, timed, calibration) -> None:
        seen.append(gc.isenabled())
        timed.append(1)
        calibration.extend([0, 2])

    assert gc.isenabled()
    result = _bare_sampler(loop).round(1)
    assert seen == [False] and gc.isenabled()
    assert result.samples_ms == [pytest.approx(0.05)] and result.pad_ms == 0.1

    def failing(*args) -> None:
        raise RuntimeError("a fault in the call")

    with pytest.raises(RuntimeError):
        _bare_sampler(failing).round(1)
    assert gc.isenabled(), "a failed round left the collector off"
    gc.disable()  # a process that had it off keeps it off
    try:
        _bare_sampler(loop).round(1)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_reference_worker_profiles_as_the_candidate_worker_does(monkeypatch) -> None:
    """The candidate's worker has used the profiler before it is timed (its warm-up, its traced
    verification calls); a process that has is slower per CUDA call, and the host clock compares the two
    processes. So the reference's worker runs a profiler session before it times anything in a judgment:
    measured baselines (`time_setup`) and the clock rounds of cached ones (`clock_setup`)."""
    from cuda_agent.judge.trusted import reference_timing, reference_worker

    sessions: list[str] = []

    class Timer:
        host_ms, flush_ms = 0.02, 0.08

        draw_ms = 0.3

        def __init__(self, fn, sets, draw=None, release=False) -> None:
            sessions.append("sampler")

        def warmup(self) -> float:
            return 0.1

        def measure_draw(self) -> float:
            return self.draw_ms

        def set_pad(self, pad_ms, flush_ms=None, cover_ms=None) -> None:
            pass

    monkeypatch.setattr(kernel_trace, "warm_profiler", lambda: sessions.append("profiled"))
    monkeypatch.setattr(reference_timing, "Sampler", Timer)
    worker = reference_worker.ReferenceWorker()
    worker.clock_setup(0.3)
    assert sessions == ["profiled", "sampler"], "the clock rounds' sampler was made before any profiling"
    sessions.clear()
    worker.samplers.clear()
    worker.time_setup(["eager"])
    assert sessions[0] == "profiled" and "sampler" in sessions
