"""Does a process that has used the CUDA profiler pay more host time per timed call? (H200 diagnosis.)

The host clock compares the candidate worker's per-call overhead (wall / calls - median sample) with the
reference worker's. On the H200 (2026-12-02) the candidate's sat 0.01-0.045 ms above in every judgment and
every kind of round, and the one difference left that touches every round alike was that the candidate's
process had used the profiler (its warm-up, its traced verification calls and rounds) and the reference's
never had. The reference worker now profiles too (`kernel_trace.warm_profiler`); this probe says whether
that was the cause, with nothing else differing: fresh processes of this same script, each making the
judge's own Sampler on one small kernel, after 0, 1 or N profiler sessions (`kernel_trace.traced`), run
interleaved (0, 1, N, 0, 1, N, ...) so that the host's drift lands on every kind alike.

    PYTHONPATH=src python3 scripts/device/profiler_state_probe.py [--sessions 0 1 20] [--repeats 2]
        [--rounds 30] [--json F]

Each row: the median per-call overhead of the processes of that kind (each process's own median over
`--rounds` rounds of 10 calls, the in-process wall: no IPC), its spread, and its difference to the
never-profiled processes. A difference above ~0.01 ms per call means the profiler's state is a cause of
the host clock's honest charges; about zero means it is not, and the mirror in the reference worker
can go.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path


def one_process(sessions: int, rounds: int, numel: int) -> dict[str, float]:
    """In this process: `sessions` profiler sessions, then the Sampler's rounds; their overheads."""
    import torch
    from host_overhead_probe import overheads  # its sibling here, on sys.path as this script's folder

    from cuda_agent.judge.candidate import kernel_trace
    from cuda_agent.judge.candidate.sampler import Sampler

    model = torch.nn.ReLU().cuda()
    sets = [[torch.randn(numel, device="cuda")] for _ in range(4)]
    for _ in range(sessions):
        kernel_trace.traced(lambda: model(sets[0][0]))
    sampler = Sampler(model, sets)
    sampler.warmup()
    sampler.set_pad(0.2, 0.085)  # one pad and flush allowance for every process, as the judge sets them
    values = overheads(sampler, rounds)
    return {"median_ms": statistics.median(values), "p90_ms": sorted(values)[int(0.9 * (len(values) - 1))]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[0, 1, 20],
                        help="profiler sessions before timing, one kind of process each (first: the baseline)")
    parser.add_argument("--repeats", type=int, default=2, help="processes of each kind, interleaved")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--numel", type=int, default=1 << 20)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--one-process", type=int, metavar="SESSIONS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds < 1 or args.repeats < 1 or any(n < 0 for n in args.sessions):
        parser.error("--rounds and --repeats must be positive and --sessions at least 0")

    if args.one_process is not None:
        print(json.dumps(one_process(args.one_process, args.rounds, args.numel)))
        return 0

    by_kind: dict[int, list[float]] = {n: [] for n in args.sessions}
    for repeat in range(args.repeats):
        for sessions in args.sessions:
            done = subprocess.run(
                [sys.executable, __file__, "--one-process", str(sessions), "--rounds", str(args.rounds),
                 "--numel", str(args.numel)],
                capture_output=True, text=True, timeout=180,
            )  # fmt: skip
            if done.returncode != 0:
                print(f"a probe process ({sessions} sessions) failed:\n{done.stderr[-2000:]}", file=sys.stderr)
                return 1
            figure = json.loads(done.stdout.strip().splitlines()[-1])
            by_kind[sessions].append(figure["median_ms"])
            print(f"[{repeat + 1}/{args.repeats}] {sessions:>3} sessions: {figure['median_ms']:.4f} ms/call "
                  f"(p90 {figure['p90_ms']:.4f})", flush=True)  # fmt: skip

    base = statistics.median(by_kind[args.sessions[0]])
    print(f"\n{'profiler sessions':<20}{'overhead ms/call':>18}{'min':>9}{'max':>9}{'vs first':>10}")
    summary = {}
    for sessions, values in by_kind.items():
        med = statistics.median(values)
        summary[str(sessions)] = {"median_ms": round(med, 5), "processes_ms": [round(v, 5) for v in values],
                                  "vs_first_ms": round(med - base, 5)}  # fmt: skip
        print(f"{sessions:<20}{med:>18.4f}{min(values):>9.4f}{max(values):>9.4f}{med - base:>+10.4f}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
