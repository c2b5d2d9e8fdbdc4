"""The parent's half of the timing protocol (decide/stats.py, candidate/sampler.py), on plain numbers: the host-clock bound, the
baseline spread, the reward margin, the pad length."""

from __future__ import annotations

import random
import statistics

import pytest

from cuda_agent.judge.candidate import sampler
from cuda_agent.judge.candidate.sampler import pad_for
from cuda_agent.judge.decide import stats
from cuda_agent.judge.decide.reward import milestone_reward
from cuda_agent.judge.decide.stats import HostClock, baseline_spread, reward_threshold, round_time


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
    assert clock.margin_ms < 0.01  # microseconds, not the old 50 us + 50% slack


def test_host_clock_charges_work_that_escaped_the_events() -> None:
    clock = HostClock.from_reference(_reference_rounds())
    honest = [0.05] * 10
    honest_wall = sum(s + 0.08 for s in honest)
    assert round_time(honest, honest_wall, clock) == (pytest.approx(0.05), False)
    # Same reported samples, but each call left 20 us of work outside the events (a forged sampler, a
    # second context): the parent's clock sees it and charges it.
    escaped_wall = honest_wall + 10 * 0.02
    charged, by_clock = round_time(honest, escaped_wall, clock)
    assert by_clock and charged >= 0.05 + 0.02 - clock.margin_ms - 1e-9


def test_host_clock_without_reference_rounds_never_binds() -> None:
    clock = HostClock.from_reference([])
    assert round_time([1.0, 1.0], 100.0, clock) == (1.0, False)


def test_baseline_spread_is_the_relative_iqr_of_round_medians() -> None:
    assert baseline_spread([1.0] * 8) == 0.0
    spread = baseline_spread([1.0, 1.0, 1.1, 1.1, 0.9, 0.9, 1.0, 1.0])
    assert spread == pytest.approx(0.05)
    assert baseline_spread([1.0]) == 0.0


def test_reward_threshold_adds_the_spread_as_margin() -> None:
    assert reward_threshold(0.0) == pytest.approx(1.05)
    assert reward_threshold(0.04) == pytest.approx(1.05 * 1.04)
    assert reward_threshold(5.0) == pytest.approx(1.05 * (1 + stats.MAX_SPREAD_MARGIN))  # capped
    assert reward_threshold(-1.0) == pytest.approx(1.05)


def test_reward_with_margin_needs_more_than_the_spread() -> None:
    # The case: 1.08x vs compile is "more than 5% faster" by the bare rule, but the compile
    # baseline's windows spread 4%: the margin withholds the 3 (it would flip with the next window).
    assert milestone_reward(True, 1.5, 1.08) == 3
    assert milestone_reward(True, 1.5, 1.08, compile_threshold=reward_threshold(0.04)) == 2
    assert milestone_reward(True, 1.5, 1.10, compile_threshold=reward_threshold(0.04)) == 3
    assert milestone_reward(True, 1.06, 1.5, eager_threshold=reward_threshold(0.02)) == 1
    # A threshold below the base never lowers the bar.
    assert milestone_reward(True, 1.04, 1.04, eager_threshold=1.0, compile_threshold=1.0) == 1


def test_pad_covers_the_host_enqueue_time_within_bounds() -> None:
    assert pad_for(0.0) == sampler.PAD_MIN_MS
    assert pad_for(0.1) == pytest.approx(sampler.PAD_FACTOR * 0.1 + sampler.PAD_EXTRA_MS)
    assert pad_for(0.1) > 0.1
    assert pad_for(100.0) == sampler.PAD_MAX_MS


def test_round_time_is_the_same_rule_for_every_contender() -> None:
    clock = HostClock.from_reference(_reference_rounds())
    rng = random.Random(1)
    for _ in range(50):
        samples = [0.05 + rng.gauss(0, 0.0005) for _ in range(10)]
        wall = sum(s + 0.08 + rng.gauss(0, 0.002) for s in samples)
        t, _ = round_time(samples, wall, clock)
        assert t == pytest.approx(statistics.median(samples), rel=0.1)
