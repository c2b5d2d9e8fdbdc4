"""Pure figures of the timing stage (decide/timing_stage.py): the host-clock diagnostics of a round, the draw
cover, the judgment's host clock, and the reward questions as the confidence sequence answers them. No
worker is called here: each function turns numbers the stage collected into the numbers it records or
decides by, so they are tested on their own.
"""

from __future__ import annotations

import statistics
from typing import Any

from cuda_agent.judge.candidate.sampler import cover_for, work_per_call
from cuda_agent.judge.decide.calls import _finite
from cuda_agent.judge.decide.sequential import Decision, decide, round_ratios
from cuda_agent.judge.decide.stats import (
    HostClock,
    baseline_spread,
    per_call_overhead,
    reward_threshold,
    round_time,
)
from cuda_agent.judge.trusted.baselines import BaselineRecord


def flush_allowance(reply: dict) -> float | None:
    """The reference's measured flush time from its reply (None from an older worker: each keeps its own)."""
    value = reply.get("flush_ms")
    try:
        flush = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return flush if flush is not None and 0.0 <= flush < 100.0 else None


def own_overheads(rounds: list[list[float]], walls: list[float]) -> list[float]:
    """Per-call host overhead of each of a contender's rounds (set-up is outside their walls)."""
    return [per_call_overhead(w, 0.0, r) for r, w in zip(rounds, walls, strict=True) if r]


def overhead_split(reply: dict, wall_ms: float, samples: list[float]) -> tuple[float, float, float]:
    """Where a round's per-call host overhead went, by the worker's own account (a claim: diagnostics
    only): inside its timed loop (the loop's wall per call beyond the round's work per call), outside it
    (the parent's wall beyond the set-up and the loop: the command's delivery, dispatch and the reply), per
    call, and the samples' skew (mean - median: what the round's time per call, the mean since v6, charges
    beyond the median sample v5 took; a contender that moves work between calls shows here)."""
    if not samples:
        return 0.0, 0.0, 0.0
    loop_ms = _finite(reply.get("wall_ms"))
    outside = (wall_ms - _finite(reply.get("setup_ms")) - loop_ms) / len(samples)
    skew = statistics.fmean(samples) - statistics.median(samples)
    return per_call_overhead(loop_ms, 0.0, samples), outside, skew


def split_medians(split: dict[str, list[tuple[float, float, float]]]) -> dict[str, dict[str, float | None]]:
    """Medians of `overhead_split` per worker: if the candidate's per-call overhead sits above the reference's,
    is it in the timed loop (the protocol), its samples' skew, or around the loop (the command path)?"""

    def median(values: list[float]) -> float | None:
        return round(statistics.median(values), 5) if values else None

    return {who: {"in_loop": median([r[0] for r in rows]), "outside_loop": median([r[1] for r in rows]),
                  "sample_skew": median([r[2] for r in rows])}
            for who, rows in split.items()}  # fmt: skip


def excess_by_round(own_ms: list[float], after_frozen: list[int], overhead_ms: float) -> dict[str, Any]:
    """Where the candidate's per-call host overhead (`own_ms`, per timed round) went above the reference's,
    round by round: what an honest candidate charged by the host clock needs to say why (after a frozen
    window? the whole judgment?). Excess = own - the reference's, in ms; the host clock charges a round
    whose excess is beyond its margin."""
    excess = [x - overhead_ms for x in own_ms]
    frozen_before = set(after_frozen)
    after = [x for i, x in enumerate(excess) if i in frozen_before]
    rest = [x for i, x in enumerate(excess) if i not in frozen_before]

    def median(values: list[float]) -> float | None:
        return round(statistics.median(values), 4) if values else None

    return {"round_excess_ms": [round(x, 4) for x in excess], "after_frozen_rounds": after_frozen,
            "excess_median_ms": {"timed": median(excess), "after_frozen": median(after), "other_timed": median(rest)}}  # fmt: skip


def draw_cover(reference: dict, candidate: dict) -> tuple[dict[str, float], float]:
    """The draws' host times the workers reported (the reference's measured in a process no candidate
    reached; the candidate's a claim) and the one cover for every contender's draws: for the longer, so
    a candidate can only lengthen it, never shorten the reference's (candidate/sampler.py: `cover_for`)."""
    draws = {"reference": _finite(reference.get("draw_ms")), "candidate": _finite(candidate.get("draw_ms"))}
    return draws, cover_for(max(draws.values()))


def judgment_clock(reference_rounds: list[tuple[float, float, list[float]]], cached: BaselineRecord | None) -> HostClock:
    """The host clock from this judgment's reference rounds; with cached baselines its margin is the wider of
    this judgment's (few rounds) and the cached one's. Made the same way while timing runs and at its end."""
    fresh = HostClock.from_reference(reference_rounds)
    if cached is None:
        return fresh
    return HostClock(fresh.overhead_ms, max(fresh.margin_ms, cached.overhead_margin_ms))


def sequential_decisions(cand_rounds: list[float], baselines: dict[str, list[float]], *, paired: bool) -> dict[str, Decision]:
    """Each reward question ("eager", "compile") by the confidence sequence: the candidate's rounds (charged
    by the host clock as the final figures are) against each baseline's rounds, paired round by round when
    they were measured in this judgment, else against their median (cached), each against its bar
    (stats.reward_threshold of the baseline's spread)."""
    return {who: decide(round_ratios(base, cand_rounds, paired=paired), reward_threshold(baseline_spread(base)))
            for who, base in baselines.items()}  # fmt: skip


def running_decisions(
    rounds: dict[str, list[list[float]]], walls: dict[str, list[float]], cached: BaselineRecord | None,
    reference_rounds: list[tuple[float, float, list[float]]],
) -> dict[str, Decision]:
    """The reward questions as the rounds so far answer them, with the host clock as far as this judgment
    has calibrated it (the final clock is made the same way)."""
    clock = judgment_clock(reference_rounds, cached)
    cand = [round_time(r, w, clock)[0] for r, w in zip(rounds["candidate"], walls["candidate"], strict=True)]
    if cached is not None:
        return sequential_decisions(cand, {"eager": cached.eager_rounds, "compile": cached.compile_rounds}, paired=False)
    return sequential_decisions(cand, {who: [work_per_call(r) for r in rounds[who]] for who in ("eager", "compile")}, paired=True)
