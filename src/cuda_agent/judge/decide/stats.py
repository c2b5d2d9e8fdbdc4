"""The parent's half of the timing protocol: statistics over workers' samples, bounded by its own clock.

Runs in the judge's parent process only (never in a worker). Facts it establishes: a round's time for the
speedup (`round_time`: the round's total work over its calls, i.e. the mean of its samples -- protocol v6;
v5 took the median sample, which work moved between the calls of a round lowered -- or the host-clock
bound `HostClock` where that is larger), the speedup over rounds and its lower confidence bound
(`ratio_with_bound`: medians over rounds, so one slow round moves nothing), the baselines' spread and
the reward thresholds widened by it (`baseline_spread`, `reward_threshold`). They cannot be forged by the
candidate because the inputs are the host clock around each round (the parent's send to the kernel's stamp
on the reply, common/channel.py: `WorkerHandle.last_round_trip_ms`), the reference worker's samples (a
process that never ran candidate code) and the candidate's samples taken only as claims that the host
clock bounds (docs/design/timing.md).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cuda_agent.judge.candidate.round_result import TAIL_RESOLUTION_MS, work_per_call
from cuda_agent.judge.decide.verdict import Stat

if TYPE_CHECKING:
    from cuda_agent.judge.config import TimingConfig

BASE_THRESHOLD = 1.05
# The host clock charges a round only beyond this many ms per call, however steady the reference's own
# rounds were: the margin from the reference's spread alone measures one process's jitter, not the jitter
# between two processes running the same loop. On the H200 (protocol v5, 2026-12-02) a margin of 0.008 ms
# from a very steady reference charged an honest row softmax 49 of its 60 rounds (reward 3 -> 2). With the
# set-up's GPU claim the candidate's mean in-loop offset from the reference is gone (median -0.005 ms per
# call over 15 cold judgments), but single honest rounds still differ by about +/-0.03 ms; at this floor
# row softmax kept its reward in all five cold runs (6 and 11 of 60 rounds charged at worst). A forged or
# escaped share below this goes uncharged by the clock (the sampler's device-wide tail still charges
# escaped work, docs/design/timing.md).
HOST_MARGIN_FLOOR_MS = 0.03
MAX_SPREAD_MARGIN = 0.10
# The part of a baseline's spread (IQR of its rounds over their median) that is a quiet GPU's own round
# jitter and so already inside the bootstrap's bound; only the spread beyond it widens the threshold. On
# the H200 with protocol v7 (2026-12-04) the compile baseline of row_softmax read 0.0793-0.0796 ms in five
# cold runs (0.37% apart), while the per-run IQR of its rounds went 0.63-1.84%: with the whole IQR as the
# margin the bar moved 1.056-1.069 from run to run and an honest 1.07x kernel got 3,3,2,3,3 on the same
# baseline. A noisy baseline (v6's short pads: 4-7%) still raises the bar by all but this allowance.
QUIET_SPREAD = 0.01


def stat_of(samples: Sequence[float]) -> Stat:
    ordered = sorted(samples)
    n = len(ordered)
    if n == 0:
        return Stat(float("nan"), float("nan"), float("nan"), float("nan"), 0)
    q = statistics.quantiles(ordered, n=4, method="inclusive") if n >= 2 else [ordered[0]] * 3
    return Stat(median=statistics.median(ordered), p25=q[0], p75=q[2], min=ordered[0], samples=n)


def median_rse(round_times: Sequence[float]) -> float:
    """Relative standard error of the median over rounds, estimated from the spread of the round times."""
    n = len(round_times)
    if n < 3:
        return float("inf")
    med = statistics.median(round_times)
    if med <= 0:
        return float("inf")
    # The standard error of a median is about 1.25 times that of a mean for near-normal data.
    return 1.2533 * statistics.stdev(round_times) / (n**0.5) / med


def ratio_with_bound(
    baseline_rounds: Sequence[float], candidate_rounds: Sequence[float], *, paired: bool, seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float, float]:
    """Median speedup (baseline / candidate) and the `alpha` percentile (5th) of its bootstrap distribution.

    Paired rounds (measured interleaved) give per-round ratios; unpaired ones (cached baseline) compare
    medians of resampled rounds.
    """
    rng = random.Random(seed)
    if paired:
        ratios = [b / c for b, c in zip(baseline_rounds, candidate_rounds, strict=True) if c > 0]
        point = statistics.median(ratios)
        boots = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
    else:
        point = statistics.median(baseline_rounds) / statistics.median(candidate_rounds)
        boots = sorted(
            statistics.median(rng.choices(baseline_rounds, k=len(baseline_rounds)))
            / statistics.median(rng.choices(candidate_rounds, k=len(candidate_rounds)))
            for _ in range(2000)
        )
    return point, boots[int(alpha * len(boots))]


def per_call_overhead(wall_ms: float, setup_ms: float, samples: Sequence[float]) -> float:
    """A round's host cost per call beyond its events: (wall - set-up - every sample) / calls, i.e. (wall -
    set-up) / calls minus the round's time per call (`work_per_call`, the statistic `round_time` charges).
    The one measure for the clock's calibration (the reference's rounds) and the candidate's own figure
    beside it. (v5 subtracted the median sample: a contender with a longer tail of slow calls looked to
    have more host overhead; with the mean the wall and the samples hold the same calls.)"""
    return (wall_ms - setup_ms) / len(samples) - work_per_call(samples)


@dataclass(frozen=True)
class HostClock:
    """The parent's own clock as a bound on what a worker's round can have cost per call.

    `overhead_ms`: per-call host cost beyond the events, measured on the trusted reference's rounds (its
    copies to fresh memory excluded); `margin_ms`: three robust standard deviations of it."""

    overhead_ms: float
    margin_ms: float

    @classmethod
    def from_reference(cls, rounds: Sequence[tuple[float, float, list[float]]]) -> HostClock:
        """`rounds`: (parent wall ms, reference setup ms, samples) of each baseline round."""
        per_call = [per_call_overhead(wall, setup, s) for wall, setup, s in rounds if s]
        if not per_call:
            return cls(0.0, float("inf"))
        centre = statistics.median(per_call)
        mad = statistics.median(abs(x - centre) for x in per_call)
        return cls(centre, max(3 * 1.4826 * mad + TAIL_RESOLUTION_MS, HOST_MARGIN_FLOOR_MS))

    def bound(self, wall_ms: float, calls: int) -> float:
        """The least a call of a round that took `wall_ms` by the parent's clock can have cost."""
        return wall_ms / max(1, calls) - self.overhead_ms - self.margin_ms


def trace_probability(round_gpu_ms: float | None, timing: TimingConfig, calls: int | None = None) -> float:
    """The chance that the next timed round is traced, from the GPU time of one candidate round so far
    (None before the first). Timing runs about max(min rounds, min_gpu_ms / round time) rounds (at most
    max_rounds); the chance p makes the expected traced ones T = max(min_traced_rounds, share x rounds),
    p = T / (rounds + T), at most 1/2. A submission that calls PyTorch on a share f > 1/2 of R rounds
    (what moving the median takes) escapes with (1 - p)^(f R): 0.4% at R = 60, 25% at R = 3 (p = 1/2)."""
    least = max(1, math.ceil(timing.min_samples / (calls or timing.samples_per_round)))  # calls: round_size.py
    if round_gpu_ms is None or not round_gpu_ms > 0:
        rounds = least
    else:
        rounds = min(timing.max_rounds, max(least, math.ceil(timing.min_gpu_ms / round_gpu_ms)))
    target = max(float(timing.min_traced_rounds), timing.traced_round_share * rounds)
    return min(0.5, target / (rounds + target))


def round_time(samples: Sequence[float], wall_ms: float, clock: HostClock) -> tuple[float, bool]:
    """A round's time for the speedup: the round's work over its calls (`work_per_call`: the mean of its
    charged samples, each between its own events after the pad), or the host-clock bound where that is
    larger (forged or escaped work). Applied to every contender alike. Returns (time, charged by the clock).

    Why the mean and not a robust statistic: it is the only one that no moving of work between the calls
    of a round can lower. A median or a trimmed mean reads a subset of the calls, and a submission that
    puts the round's work into the calls left out of it (a burst whose calls 2-9 queue behind a 4 us marker
    and whose call 10 runs the batch) is timed by the marker (protocol v5: +3 at 2.9-3.1x on an elementwise
    op and a LayerNorm). An honest round with one slow call (a clock dip, a host preemption in the tail) is
    one round: the speedup is the median over rounds (`ratio_with_bound`), which it does not move."""
    per_call = work_per_call(samples)
    bound = clock.bound(wall_ms, len(samples))
    return (bound, True) if bound > per_call else (per_call, False)


def baseline_spread(round_times: Sequence[float]) -> float:
    """Window-to-window spread of a baseline: the IQR of its round times over their median."""
    if len(round_times) < 2:
        return 0.0
    q = statistics.quantiles(sorted(round_times), n=4, method="inclusive")
    med = statistics.median(round_times)
    return (q[2] - q[0]) / med if med > 0 else 0.0


def reward_threshold(spread: float, base: float = BASE_THRESHOLD) -> float:
    """The speedup a lower confidence bound must exceed: `base` (1.05) with the baseline's measured spread
    beyond a quiet GPU's (QUIET_SPREAD) as an extra margin (at most MAX_SPREAD_MARGIN), so a noisy baseline
    never hands out a reward while a quiet one's jitter does not move the bar from run to run."""
    return base * (1.0 + min(MAX_SPREAD_MARGIN, max(0.0, spread - QUIET_SPREAD)))
