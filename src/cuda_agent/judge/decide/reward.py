"""The milestone reward of CUDA Agent.

-1 if anything failed; 3 if more than 5% faster than both eager and torch.compile; 2 if more than 5%
faster than eager only; else 1. "More than 5% faster" means speedup = baseline_ms / candidate_ms > 1.05,
and the judge passes the lower confidence bound of the speedup, so a lucky sample earns nothing.

The judge also passes one threshold per baseline: 1.05 widened by that baseline's own measured spread
(decide/stats.py: reward_threshold), so a baseline that was noisy in this judgment needs a larger margin before a
reward depends on it -- the reward then does not flip between cold judgments of the same kernel.

Trust boundary: runs in the parent, on numbers the parent computed (decide/stats.py) from its own clock and
the reference worker's baselines; a pure function, nothing here can be reached by the candidate.
"""

from __future__ import annotations

SPEEDUP_THRESHOLD = 1.05


def milestone_reward(
    passed: bool,
    speedup_vs_eager: float | None,
    speedup_vs_compile: float | None,
    threshold: float = SPEEDUP_THRESHOLD,
    *,
    eager_threshold: float | None = None,
    compile_threshold: float | None = None,
) -> int:
    if not passed:
        return -1
    eager_bar = threshold if eager_threshold is None else max(threshold, eager_threshold)
    compile_bar = threshold if compile_threshold is None else max(threshold, compile_threshold)
    faster_than_eager = speedup_vs_eager is not None and speedup_vs_eager > eager_bar
    faster_than_compile = speedup_vs_compile is not None and speedup_vs_compile > compile_bar
    if faster_than_eager and faster_than_compile:
        return 3
    if faster_than_eager:
        return 2
    return 1
