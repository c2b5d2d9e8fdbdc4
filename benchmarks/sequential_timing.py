"""How many timed rounds the reward needs, and how often it is wrong, by simulation (issue 34, item 1).

Three ways to decide "more than the bar faster" from per-round speedups, on the same simulated rounds:

- **fixed**: today's default: the whole budget (`--rounds`, 60), then the bootstrap's 5th percentile of the
  median against the bar (decide/stats.py: ratio_with_bound);
- **peeking**: the same bootstrap checked after every `--look-every` rounds, stopping at the first
  "faster": the invalid stopping rule the issue warns about;
- **sequence**: decide/sequential.py's confidence sequence (1%), stopping as soon as it answers either way,
  with the bootstrap at 4% at the full budget (TimingConfig.sequential).

Rounds are log-normal around the true speedup with per-round noise `--noise` and heavy tails (one round in
ten three times as noisy). A kernel exactly at the bar must be called faster at most 5% of the time; the
table reports that rate per method, and the rounds each one spends (the baseline for the ratio is the fixed
budget, in the same run).

    python benchmarks/sequential_timing.py [--trials 400] [--noise 0.02] [--json out.json]

Runs on the CPU in about a minute. Exits 1 if the sequence's error at the bar exceeds 5% + three standard
errors of the simulation.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from cuda_agent.judge.decide.sequential import BOOTSTRAP_ALPHA, decide

BAR = 1.05


def simulate(speedup: float, noise: float, rounds: int, rng: np.random.Generator) -> np.ndarray:
    scale = np.where(rng.random(rounds) < 0.1, 3 * noise, noise)
    return speedup * np.exp(rng.normal(0.0, 1.0, rounds) * scale)


def bootstrap_low(ratios: np.ndarray, alpha: float, rng: np.random.Generator, draws: int = 2000) -> float:
    """The bootstrap's `alpha` percentile of the median ratio (stats.ratio_with_bound, vectorised)."""
    picks = rng.integers(0, len(ratios), size=(draws, len(ratios)))
    return float(np.quantile(np.median(ratios[picks], axis=1), alpha, method="lower"))


def run(speedup: float, noise: float, trials: int, rounds: int, look_every: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    faster = {"fixed": 0, "peeking": 0, "sequence": 0}
    spent = {"fixed": 0, "peeking": 0, "sequence": 0}
    for _ in range(trials):
        ratios = simulate(speedup, noise, rounds, rng)
        faster["fixed"] += bootstrap_low(ratios, 0.05, rng) > BAR
        spent["fixed"] += rounds
        looks = range(look_every, rounds + 1, look_every)
        stop = next((n for n in looks if bootstrap_low(ratios[:n], 0.05, rng) > BAR), None)
        faster["peeking"] += stop is not None
        spent["peeking"] += stop or rounds
        answer, used = "open", rounds
        for n in range(9, rounds + 1):
            answer = decide(ratios[:n].tolist(), BAR).answer
            if answer != "open":
                used = n
                break
        if answer == "open":  # the full budget: the larger of the sequence's bound and the bootstrap's (4%)
            answer = "above" if bootstrap_low(ratios, BOOTSTRAP_ALPHA, rng) > BAR else "below"
        faster["sequence"] += answer == "above"
        spent["sequence"] += used
    out = {f"{k}_faster": v / trials for k, v in faster.items()}
    out.update({f"{k}_rounds": spent[k] / trials for k in spent})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=400, help="simulated judgments per speedup (default 400)")
    parser.add_argument("--noise", type=float, default=0.02, help="per-round log-noise (default 0.02)")
    parser.add_argument("--rounds", type=int, default=60, help="the fixed budget (default 60, TimingConfig)")
    parser.add_argument("--look-every", type=int, default=5, help="the peeking rule's looks (default every 5)")
    parser.add_argument("--json", type=Path, default=None, help="write the table as JSON here")
    args = parser.parse_args()
    speedups = (0.7, 1.0, 1.03, BAR, 1.07, 1.1, 1.2, 1.5, 3.0)
    rows, began = [], time.monotonic()
    print(f"{'speedup':>8} | {'P(faster): fixed':>16} {'peeking':>8} {'sequence':>9} | "
          f"{'rounds: fixed':>13} {'peeking':>8} {'sequence':>9}")  # fmt: skip
    for index, speedup in enumerate(speedups):
        row = {"speedup": speedup, **run(speedup, args.noise, args.trials, args.rounds, args.look_every, index)}
        rows.append(row)
        print(f"{speedup:8.2f} | {row['fixed_faster']:16.3f} {row['peeking_faster']:8.3f} "
              f"{row['sequence_faster']:9.3f} | {row['fixed_rounds']:13.1f} {row['peeking_rounds']:8.1f} "
              f"{row['sequence_rounds']:9.1f}", flush=True)  # fmt: skip
    fixed = sum(r["fixed_rounds"] for r in rows)
    sequence = sum(r["sequence_rounds"] for r in rows)
    at_bar = next(r for r in rows if r["speedup"] == BAR)
    limit = 0.05 + 3 * math.sqrt(0.05 * 0.95 / args.trials)
    summary = {
        "noise": args.noise, "trials": args.trials, "rows": rows,
        "rounds_ratio_fixed_over_sequence": fixed / sequence,
        "error_at_bar": {k: at_bar[f"{k}_faster"] for k in ("fixed", "peeking", "sequence")},
        "seconds": round(time.monotonic() - began, 1),
    }  # fmt: skip
    print(f"rounds spent, fixed budget / sequence over these speedups: {fixed / sequence:.2f}x; "
          f"called faster at the bar: fixed {at_bar['fixed_faster']:.3f}, peeking {at_bar['peeking_faster']:.3f}, "
          f"sequence {at_bar['sequence_faster']:.3f} (promised <= 0.05)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    if at_bar["sequence_faster"] > limit:
        print(f"error: the sequence called a kernel at the bar faster {at_bar['sequence_faster']:.3f} of the time "
              f"(limit {limit:.3f})", file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
