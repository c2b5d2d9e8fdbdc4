"""The host clock's noise with the judge busy beside a timing: the parent's own clock against the
kernel's stamp on the reply, in one run, on any machine (no GPU).

    python benchmarks/host_clock.py [--rounds 400] [--round-ms 1.0] [--threads 2] [--json out.json]

The timing stage bounds every worker round by the host clock (decide/stats.py: HostClock): the wall time
of a round, less the per-call overhead calibrated on the reference's rounds, less a margin of three robust
standard deviations of it. A judge process is rarely idle while it times: `judge_many` and `cuda-agent
serve` build and statically check the next submissions in other threads of the same Python process. With
the wall read by the parent after the reply, every GIL hand-over (up to the 5 ms switch interval) and every
wait for a core lands in some round and charges it (the H200 runs: honest launch-bound kernels charged at
random while the next builds ran). With the wall ending at the kernel's stamp on the reply message
(common/channel.py) none of that counts.

Rounds alternate between two roles, as in a judgment: "reference" rounds calibrate a HostClock, the
"candidate" rounds in between are charged by it (10 calls of `--round-ms`/10 each, honest claims). Each
role's worker spins exactly `--round-ms` per round (spin_worker.py). Conditions: quiet, then with
`--threads` threads running the judge's static checks over the bundled examples (parent-side Python of a
build). Prints per clock and condition the excess of the wall over the spin (p50/p90/p99), the margin the
calibration gives (the forged or escaped work per call the clock cannot see), the honest rounds charged
and the honest candidate's median time after the charges over the truth; the ratio is the loaded margin
of the parent's clock over the kernel stamp's. Writes `--json`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from cuda_agent.judge.common.channel import WorkerHandle  # noqa: E402 - after the path
from cuda_agent.judge.common.procs import scrubbed_env  # noqa: E402
from cuda_agent.judge.decide.stats import HostClock, round_time  # noqa: E402

CALLS = 10
CLOCKS = ("parent_read", "kernel_stamp")


def background_checks(stop: threading.Event, done: list[int]) -> None:
    """The parent-side Python of builds: the judge's static checks of every bundled example, again and again."""
    from cuda_agent.judge.trusted.static_checks import check_kernel_sources, check_model_new

    folders = [p for p in sorted((REPO / "examples").iterdir()) if (p / "kernels").is_dir()]
    while not stop.is_set():
        for folder in folders:
            check_kernel_sources(folder / "kernels", None, preprocess=False)
            if (folder / "model_new.py").is_file():
                check_model_new((folder / "model_new.py").read_text())
            done[0] += 1


def measure(workers: dict[str, WorkerHandle], rounds: int, round_ms: float) -> dict[str, dict[str, list]]:
    """Per role, per clock: (wall ms, spun ms) of each round."""
    out: dict[str, dict[str, list]] = {role: {c: [] for c in CLOCKS} for role in workers}
    for i in range(rounds):
        role = "reference" if i % 2 == 0 else "candidate"
        worker = workers[role]
        began = time.perf_counter()
        reply = worker.call("spin", 30, ms=round_ms)
        parent_read = (time.perf_counter() - began) * 1000
        spun = float(reply["spun_ms"])
        out[role]["parent_read"].append((parent_read, spun))
        out[role]["kernel_stamp"].append((worker.last_round_trip_ms, spun))
    return out


def summarise(measured: dict[str, dict[str, list]]) -> dict[str, dict[str, Any]]:
    """Per clock: the excess of the wall over the spin, the calibration it gives (overhead, margin) and what
    that does to the honest candidate: its rounds charged and its median time per call over the truth."""
    rows = {}
    for clock in CLOCKS:
        reference = [(wall, 0.0, [spun / CALLS] * CALLS) for wall, spun in measured["reference"][clock]]
        host = HostClock.from_reference(reference)
        candidate = measured["candidate"][clock]
        timed = [round_time([spun / CALLS] * CALLS, wall, host) for wall, spun in candidate]
        truth = statistics.median(spun / CALLS for _, spun in candidate)
        excess = sorted(wall - spun for wall, spun in candidate + measured["reference"][clock])
        q = statistics.quantiles(excess, n=100, method="inclusive")
        rows[clock] = {
            "excess_ms": {"p50": round(q[49], 4), "p90": round(q[89], 4), "p99": round(q[98], 4),
                          "max": round(excess[-1], 4)},
            "per_call_overhead_ms": round(host.overhead_ms, 5), "margin_ms": round(host.margin_ms, 5),
            "honest_rounds_charged": sum(by_clock for _, by_clock in timed), "candidate_rounds": len(candidate),
            "honest_time_over_truth": round(statistics.median(t for t, _ in timed) / truth, 4),
        }  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=400, help="rounds per condition (half of them reference)")
    parser.add_argument("--round-ms", type=float, default=1.0, help="what a round spins (10 calls)")
    parser.add_argument("--threads", type=int, default=2, help="threads of static checks beside, loaded")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results: dict[str, Any] = {"rounds": args.rounds, "round_ms": args.round_ms, "threads": args.threads}
    with tempfile.TemporaryDirectory(prefix="host-clock-") as scratch:
        workers = {role: WorkerHandle("cuda_agent.judge.common.spin_worker", log_path=Path(scratch) / f"{role}.log",
                                      env=scrubbed_env(), cwd=Path(scratch)) for role in ("reference", "candidate")}  # fmt: skip
        try:
            for worker in workers.values():
                worker.call("spin", 60, ms=1.0)  # started
            for condition in ("quiet", "loaded"):
                stop, done = threading.Event(), [0]
                threads = [threading.Thread(target=background_checks, args=(stop, done), daemon=True)
                           for _ in range(args.threads if condition == "loaded" else 0)]  # fmt: skip
                for t in threads:
                    t.start()
                time.sleep(0.2 if threads else 0)
                print(f"[host-clock] {condition}: {args.rounds} rounds of {args.round_ms} ms ...", file=sys.stderr)
                began = time.monotonic()
                measured = measure(workers, args.rounds, args.round_ms)
                stop.set()
                for t in threads:
                    t.join()
                results[condition] = summarise(measured)
                results[condition]["seconds"] = round(time.monotonic() - began, 2)
                results[condition]["background_checks"] = done[0]
        finally:
            for worker in workers.values():
                worker.close()
    print(f"\n{'condition':<8} {'clock':<13} {'excess p50':>10} {'p90':>8} {'p99':>8} {'margin/call':>11} "
          f"{'charged':>9} {'honest time':>11}")  # fmt: skip
    for condition in ("quiet", "loaded"):
        for clock in CLOCKS:
            r = results[condition][clock]
            e = r["excess_ms"]
            print(f"{condition:<8} {clock:<13} {e['p50']:>10.3f} {e['p90']:>8.3f} {e['p99']:>8.3f} "
                  f"{r['margin_ms']:>11.4f} {r['honest_rounds_charged']:>4}/{r['candidate_rounds']:<4} "
                  f"{r['honest_time_over_truth']:>10.3f}x")  # fmt: skip
    loaded = results["loaded"]
    parent, stamp = (loaded[c]["margin_ms"] for c in CLOCKS)
    results["loaded_margin_ratio_parent_over_stamp"] = round(parent / stamp, 2) if stamp > 0 else None
    print("\nexcess: wall - spin per round (ms); margin/call: what forged or escaped work per call the clock cannot"
          " see (ms);\nhonest time: the honest candidate's median time per call after the clock's charges, over"
          " the truth.")
    print(f"loaded: the parent's clock is blind to {parent:.4f} ms per call, the kernel's stamp to {stamp:.4f}:"
          f" {results['loaded_margin_ratio_parent_over_stamp']}x")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
