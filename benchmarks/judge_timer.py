"""Validate the judge's timer on a GPU, in one run:

1. device-to-device copy bandwidth through the judge's Sampler (target: >= 4.0 TB/s on an H200);
2. A/A: the same honest submission judged N times; spread of candidate medians (target: within 2%);
   also eager vs eager ratio across the runs, and the ratio of the candidate against its own first run.

    python benchmarks/judge_timer.py [--submission examples/elementwise_chain] [--runs 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path


def copy_bandwidth(gib: int = 1) -> float:
    import torch

    from cuda_agent.judge.candidate.sampler import Sampler

    n = gib << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    sampler = Sampler(lambda a, b: b.copy_(a), [[src, dst]])
    sampler.warmup()
    median_ms = statistics.median(sampler.round(50).samples_ms)
    del src, dst, sampler
    torch.cuda.empty_cache()
    return 2 * n / (median_ms / 1000) / 1e12


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--submission", type=Path, default=Path("examples/elementwise_chain"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.decide.entry import judge

    bandwidth = copy_bandwidth()
    print(
        f"device-to-device copy through the judge's timer: {bandwidth:.2f} TB/s (target >= 4.0)", flush=True
    )
    with tempfile.TemporaryDirectory() as cache:
        config = JudgeConfig(cache_dir=Path(cache))  # fresh baseline cache: run 1 measures, the rest reuse
        verdicts = []
        for i in range(args.runs):
            v = judge(args.submission, config=config)
            assert v.timing is not None, v.reason
            verdicts.append(v)
            t = v.timing
            print(f"run {i + 1}: reward {v.reward:+d} candidate {t.candidate_ms:.4f} ms "
                  f"(IQR of rounds {t.candidate.p25:.4f}-{t.candidate.p75:.4f}, "
                  f"{t.rounds} rounds, baselines {t.baseline_source}) eager {t.eager_ms:.4f} compile "
                  f"{t.compile_ms:.4f} total {sum(v.stage_seconds.values()):.1f} s", flush=True)  # fmt: skip
    times = [v.timing.candidate_ms for v in verdicts if v.timing]
    spread = max(times) / min(times) - 1
    ratios = [t / times[0] for t in times]
    print(f"A/A: candidate medians {', '.join(f'{t:.4f}' for t in times)} ms")
    print(f"A/A spread (max/min - 1): {100 * spread:.2f}% (target <= 2%); ratios to run 1: "
          f"{', '.join(f'{r:.4f}' for r in ratios)}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"copy_tb_s": bandwidth, "candidate_ms": times, "spread": spread,
                                         "verdicts": [v.to_dict() for v in verdicts]}, indent=1))  # fmt: skip
    ok = bandwidth >= 4.0 and spread <= 0.02
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
