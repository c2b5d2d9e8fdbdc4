"""Why an honest candidate's rounds cost more host time per call than the reference's (H200 diagnosis).

On the H200 (2026-12-01) the host clock charged an honest ReLU 38 of 60 rounds in a judgment whose
baselines it measured in the same run: the candidate's per-call overhead (wall / calls - median sample)
sat above the reference's by more than the clock's margin (~0.04 ms), so its speedup read 0.80x where its
device time said 0.94x. The candidate worker differs from the reference worker in a few ways that this
probe separates, in one process, on one small kernel, with the judge's own Sampler:

  plain        a fresh process's sampler, as the reference worker times;
  kept         rounds on fresh inputs whose outputs are all kept (the candidate's timed rounds);
  profiled     after one torch.profiler session (the candidate worker's warm-up runs one);
  traced       right after a traced round (kernel_trace.traced, as the coverage gate's rounds);
  traced+kept  both;
  flush +max / flush +min  one sampler whose pad takes the largest / smallest flush time 8 fresh samplers
               measured (what the pads of two processes differed by before the judge shared one).

Each row: median per-call overhead in ms over `--rounds` rounds of 10 calls (the in-process wall, so IPC
is not in it), and its difference to `plain`. A difference above ~0.02 ms names the cause to remove or to
mirror in the reference worker.

    PYTHONPATH=src python3 scripts/device/host_overhead_probe.py [--rounds 30] [--numel 1048576] [--json F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def overheads(sampler, rounds: int, fresh_sets=None) -> list[float]:
    """Per-call host overhead of each round, by the judge's own measure (decide/stats.py)."""
    from cuda_agent.judge.decide.stats import per_call_overhead

    out = []
    for _ in range(rounds):
        result = sampler.round(10, fresh=fresh_sets() if fresh_sets else None)
        out.append(per_call_overhead(result.wall_ms, result.setup_ms, result.samples_ms))
        sampler.kept = []
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--numel", type=int, default=1 << 20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import torch

    from cuda_agent.judge.candidate import kernel_trace
    from cuda_agent.judge.candidate.sampler import Sampler

    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    model = torch.nn.ReLU().cuda()
    sets = [[torch.randn(args.numel, device="cuda")] for _ in range(4)]

    def fresh() -> list[list[torch.Tensor]]:
        return [[torch.randn(args.numel, device="cuda")] for _ in range(10)]

    sampler = Sampler(model, sets)
    sampler.warmup()
    sampler.set_pad(0.2)
    rows: dict[str, list[float]] = {}
    rows["plain"] = overheads(sampler, args.rounds)
    rows["kept"] = overheads(sampler, args.rounds, fresh)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]):  # the candidate worker's warm-up
        torch.ones(8, device="cuda").add_(1)
        torch.cuda.synchronize()
    rows["profiled"] = overheads(sampler, args.rounds)
    traced, traced_kept = [], []
    for _ in range(args.rounds):
        kernel_trace.traced(lambda: sampler.round(10))
        traced += overheads(sampler, 1)
        kernel_trace.traced(lambda: sampler.round(10))
        traced_kept += overheads(sampler, 1, fresh)
    rows["traced"], rows["traced+kept"] = traced, traced_kept
    rows["plain, again"] = overheads(sampler, args.rounds)

    # Each sampler measures its own flush time when made; the pad used to be 1.2 x that + pad, so two
    # processes' pads differed by 1.2 x the spread of this figure (the judge now shares the reference's).
    flushes = []
    for _ in range(8):
        probe = Sampler(model, sets)
        flushes.append(probe.flush_ms)
        torch.ones(1 << 20, device="cuda").mul_(2)  # a little unrelated GPU work between makings
        torch.cuda.synchronize()
    shared = Sampler(model, sets)
    shared.warmup()
    shared.set_pad(0.2, flush_ms=max(flushes))
    rows["flush +max"] = overheads(shared, args.rounds)
    shared.set_pad(0.2, flush_ms=min(flushes))
    rows["flush +min"] = overheads(shared, args.rounds)

    base = statistics.median(rows["plain"])
    print(f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__}, {args.rounds} rounds of 10 calls, "
          f"relu of {args.numel} floats, pad {sampler.pad_ms} ms")  # fmt: skip
    print(f"{'case':<14}{'overhead ms/call':>18}{'vs plain':>10}{'p90':>9}")
    summary = {}
    for name, values in rows.items():
        med = statistics.median(values)
        p90 = sorted(values)[int(0.9 * (len(values) - 1))]
        summary[name] = {"median_ms": round(med, 5), "p90_ms": round(p90, 5), "vs_plain_ms": round(med - base, 5)}
        print(f"{name:<14}{med:>18.4f}{med - base:>+10.4f}{p90:>9.4f}")
    spread = max(flushes) - min(flushes)
    print(f"flush_ms of 8 fresh samplers: min {min(flushes):.4f}, median {statistics.median(flushes):.4f}, "
          f"max {max(flushes):.4f}; 1.2 x spread = {1.2 * spread:.4f} ms/call (own-flush pads could differ by it)")
    summary["flush_ms_of_fresh_samplers"] = [round(f, 5) for f in flushes]
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
