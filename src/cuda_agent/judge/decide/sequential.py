"""Stop timing as soon as the reward is decided, without spending its 95% guarantee (issue 34, item 1).

The reward asks one question per baseline: is the candidate's median speedup above the bar (1.05 widened
by the baseline's spread)? Timing used to run a fixed budget (until the median's relative standard error
fell under 0.5% and 100 ms of GPU work were timed, at most 60 rounds) and then compare the 5th percentile of
a bootstrap with the bar. Most judgments are not close: a kernel at 1.4x or at 0.7x is decided after a few
rounds, and the rest of the budget is spent confirming it.

Checking a fixed-level test after every round is not a valid way to stop early: a kernel sitting exactly at
the bar would be called faster far more often than 5% (the simulation in benchmarks/sequential_timing.py
measures it). This module is a valid one: a confidence sequence for the median per-round ratio, from the
sign test's betting martingale.

For a bar b, a round is a bet on whether its ratio is above b. Under "the median is at most b" (each round's
ratio is above b with probability at most 1/2, whatever came before), the wealth of a bettor who stakes a
fraction lambda of it on "above" every round, W_n = (1 + lambda)^a (1 - lambda)^(n - a) after a rounds above
of n, is a nonnegative supermartingale; so is the average over a few stakes. By Ville's inequality it ever
reaches 1/alpha with probability at most alpha, at any stopping time. The wealth depends on the rounds only
through a, so the set of bars it rejects is the set below an order statistic: the lower confidence bound is
the m-th largest ratio, m the fewest rounds above that make the wealth reach 1/alpha (`needed_above`); the
upper bound is the m-th smallest, by the same bet on "at or below". Both hold at every round at once.

How the reward keeps its meaning (TimingConfig.sequential): a judgment that stops early is decided by these
bounds at level SEQUENTIAL_ALPHA (1%); one that runs its full budget by the larger of this bound and the
bootstrap's at BOOTSTRAP_ALPHA (4%). A kernel no faster than the bar is then called faster with probability
at most 1% + 4% = 5%, the documented guarantee (a union bound over the two ways of saying "faster").

What it assumes, as the bootstrap did: rounds are exchangeable given the past (no drift between the
candidate's rounds and the baselines' that the interleaving does not cancel). Cached baselines give
unpaired rounds: each candidate round is compared with the baseline's median, whose own uncertainty the
bar's spread margin covers (stats.reward_threshold).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

SEQUENTIAL_ALPHA = 0.01  # the confidence sequence's share of the reward's 5%
BOOTSTRAP_ALPHA = 0.04  # the full-budget bootstrap's share (stats.ratio_with_bound's percentile)
# Stakes averaged over: a large stake decides a clear case in few rounds (9 of 9 above at 0.9), a small one
# keeps the power for a kernel whose rounds fall above the bar only most of the time.
STAKES = (0.3, 0.6, 0.9)


@lru_cache(maxsize=4096)
def needed_above(rounds: int, alpha: float = SEQUENTIAL_ALPHA) -> int | None:
    """The fewest of `rounds` rounds that must fall above a bar for the betting wealth to reach 1/alpha
    (None: no count of this many rounds can)."""
    target = math.log(1.0 / alpha)
    for above in range(rounds + 1):
        terms = [above * math.log1p(s) + (rounds - above) * math.log1p(-s) for s in STAKES]
        top = max(terms)
        if top + math.log(sum(math.exp(t - top) for t in terms) / len(STAKES)) >= target:
            return above
    return None


def lower_bound(ratios: Sequence[float], alpha: float = SEQUENTIAL_ALPHA) -> float:
    """A lower bound of the median ratio valid at every round at once (0.0 while too few rounds)."""
    need = needed_above(len(ratios), alpha)
    return sorted(ratios, reverse=True)[need - 1] if need else 0.0


def upper_bound(ratios: Sequence[float], alpha: float = SEQUENTIAL_ALPHA) -> float:
    """An upper bound of the median ratio valid at every round at once (inf while too few rounds)."""
    need = needed_above(len(ratios), alpha)
    return sorted(ratios)[need - 1] if need else math.inf


@dataclass(frozen=True)
class Decision:
    """Where one baseline's question stands: "above" the bar, "below" (at or under it), or "open"."""

    answer: str
    low: float
    high: float
    rounds: int

    def summary(self) -> dict[str, object]:
        return {"answer": self.answer, "low": round(self.low, 4), "high": round(self.high, 4), "rounds": self.rounds}


def decide(ratios: Sequence[float], bar: float, alpha: float = SEQUENTIAL_ALPHA) -> Decision:
    """Whether the median ratio is above `bar`, below it, or not yet known, at level `alpha`."""
    low, high = lower_bound(ratios, alpha), upper_bound(ratios, alpha)
    answer = "above" if low > bar else "below" if high <= bar else "open"
    return Decision(answer, low, high, len(ratios))


def round_ratios(baseline: Sequence[float], candidate: Sequence[float], *, paired: bool) -> list[float]:
    """Per-round speedups: paired rounds (measured interleaved) round by round; cached baselines against
    their median."""
    if paired:
        return [b / c for b, c in zip(baseline, candidate, strict=False) if c > 0]
    if not baseline:
        return []
    centre = statistics.median(baseline)
    return [centre / c for c in candidate if c > 0]
