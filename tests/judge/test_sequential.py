"""The confidence sequence that lets timing stop once the reward is decided (decide/sequential.py, issue 34).

Its promise, checked here by simulation: a kernel whose median speedup sits exactly at the bar is called
faster with probability at most 1% however long timing runs and whenever it stops, where checking the
bootstrap's 5% bound after every round calls it faster far more often; and a clear case is decided in
about ten rounds, where the fixed budget spends sixty."""

from __future__ import annotations

import math
import random

import pytest

from cuda_agent.judge.decide.sequential import decide, lower_bound, needed_above, round_ratios, upper_bound
from cuda_agent.judge.decide.stats import ratio_with_bound

BAR = 1.05


def rounds_at(speedup: float, noise: float, n: int, rng: random.Random) -> list[float]:
    """Per-round ratios around `speedup`: log-normal noise with heavy tails (a t-like mix, as timing has)."""
    out = []
    for _ in range(n):
        scale = noise * (3.0 if rng.random() < 0.1 else 1.0)
        out.append(speedup * math.exp(rng.gauss(0.0, scale)))
    return out


def test_the_needed_count_grows_from_nine_of_nine() -> None:
    assert all(needed_above(n) is None for n in range(9))
    assert needed_above(9) == 9
    counts = [needed_above(n) for n in range(9, 200)]
    assert all(c is not None and n / 2 < c <= n for n, c in zip(range(9, 200), counts, strict=True))
    assert counts[-1] / 199 < 0.7  # the share needed falls towards one half


def test_bounds_are_order_statistics_on_either_side_of_the_median() -> None:
    ratios = [1.0 + 0.01 * i for i in range(40)]
    assert lower_bound(ratios) < sorted(ratios)[20] < upper_bound(ratios)
    assert lower_bound(ratios[:5]) == 0.0 and upper_bound(ratios[:5]) == math.inf
    assert decide(ratios[:5], BAR).answer == "open"


def test_at_the_bar_the_sequence_says_faster_at_most_one_time_in_a_hundred() -> None:
    """2,000 kernels with a true median speedup of exactly the bar, looked at after every round from the
    third to the sixtieth: the sequence ever says "above" for at most 1% (plus simulation error); the
    bootstrap's 5% bound checked after every round says it for far more than 5%."""
    rng = random.Random(1)
    trials, sequence_wrong, naive_wrong = 2000, 0, 0
    for trial in range(trials):
        ratios = rounds_at(BAR, 0.02, 60, rng)
        if any(decide(ratios[:n], BAR).answer == "above" for n in range(3, 61)):
            sequence_wrong += 1
        if trial < 80 and any(ratio_with_bound([1.0] * n, [1.0 / r for r in ratios[:n]], paired=True, seed=n)[1] > BAR
                              for n in range(10, 61, 10)):  # six looks (the bootstrap is slow in pure Python)
            naive_wrong += 1
    assert sequence_wrong / trials <= 0.015, sequence_wrong
    assert naive_wrong / 80 > 0.08, naive_wrong  # 16% here: three times the promised 5%


@pytest.mark.parametrize(("speedup", "answer", "mean_rounds"), [(1.4, "above", 11), (0.7, "below", 11), (1.0, "below", 14)])
def test_clear_cases_are_decided_in_about_ten_rounds(speedup: float, answer: str, mean_rounds: float) -> None:
    """At 3% noise per round; 5% under the bar takes a few rounds more than a clear case."""
    rng = random.Random(2)
    used = []
    for _ in range(200):
        ratios = rounds_at(speedup, 0.03, 60, rng)
        n = next((n for n in range(1, 61) if decide(ratios[:n], BAR).answer != "open"), 61)
        assert n <= 60 and decide(ratios[:n], BAR).answer == answer
        used.append(n)
    assert sum(used) / len(used) <= mean_rounds


def test_cached_baselines_are_compared_with_their_median() -> None:
    assert round_ratios([1.0, 2.0, 30.0], [0.5, 1.0], paired=False) == [4.0, 2.0]
    assert round_ratios([1.0, 2.0], [0.5, 1.0], paired=True) == [2.0, 2.0]
    assert round_ratios([], [0.5], paired=False) == []
