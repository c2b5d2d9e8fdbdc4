"""Which parts of a spare worker's warm-up disturb another process's kernels? (GPU device probe)

A spare candidate worker's GPU warm-up (CUDA context, then the first CUDA profiler session, about 1.2 s on
an H100, nearly all of it the profiler) takes `WorkerPool.quiet`, so it never runs beside a timed window;
in a batch every verdict spends one spare, and the replacement's warm-up is the lane's `quiet_wait`
(0.58 s a verdict, docs/design/throughput.md). If a part of it leaves other processes' kernels alone, that
part can run beside timing. This probe measures each part's cost and its disturbance directly: this
process times a fixed kernel back to back (CUDA events, one synchronised call at a time) while a fresh
process goes through the warm-up part by part, and each call is assigned to the part whose window it fell
in (CLOCK_MONOTONIC is one clock for every process of the host).

    PYTHONPATH=src python3 benchmarks/warmup_beside_timing.py --reps 5 --json /tmp/warmup.json

Parts: `import` (torch, CPU only: the control), `cuda_init` (context creation and a first tiny kernel),
`prepare` (the profiler's Kineto/CUPTI set-up, no trace yet), `first_trace` (the first traced session
around a tiny op) and `second_trace` (a later one, as a candidate's coverage gate pays it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap
import time

# The fresh process: reports each part's window as one JSON line on stdout (its own clock is the host's).
WARMER = textwrap.dedent(
    """
    import json, sys, time
    def window(name, began):
        print(json.dumps({"part": name, "began": began, "ended": time.monotonic()}), flush=True)
        time.sleep(GAP)
    GAP = float(sys.argv[1])
    began = time.monotonic(); import torch; window("import", began)
    began = time.monotonic(); torch.cuda.init(); torch.ones(1, device="cuda").add_(1); torch.cuda.synchronize()
    window("cuda_init", began)
    from torch.profiler import ProfilerActivity, profile
    began = time.monotonic(); prof = profile(activities=[ProfilerActivity.CUDA]); prof.prepare_trace()
    window("prepare", began)
    began = time.monotonic(); prof.start_trace(); torch.ones(8, device="cuda").add_(1); torch.cuda.synchronize()
    prof.stop_trace(); window("first_trace", began)
    began = time.monotonic()
    with profile(activities=[ProfilerActivity.CUDA]):
        torch.ones(8, device="cuda").add_(1); torch.cuda.synchronize()
    window("second_trace", began)
    """
)
PARTS = ("import", "cuda_init", "prepare", "first_trace", "second_trace")


def timed_calls(
    seconds: float, size: int, stop_when: subprocess.Popen | None = None
) -> list[tuple[float, float]]:
    """(host time the call began, its device milliseconds) for back-to-back synchronised matmuls, for
    `seconds` or until `stop_when` exits."""
    import torch

    a = torch.randn(size, size, device="cuda")
    b = torch.randn(size, size, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (stop_when is None or stop_when.poll() is None):
        began = time.monotonic()
        start.record()
        torch.mm(a, b)
        end.record()
        end.synchronize()
        calls.append((began, start.elapsed_time(end)))
    return calls


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    if not ordered:
        return {"n": 0}
    return {"n": len(ordered), "median_ms": round(statistics.median(ordered), 4),
            "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 4), "max_ms": round(ordered[-1], 4)}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="fresh warming processes, one after another")
    parser.add_argument("--size", type=int, default=2048, help="the timed matmul's side (fp32)")
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between the warmer's parts")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    timed_calls(1.0, args.size)  # this process's own warm-up
    idle = [ms for _, ms in timed_calls(2.0, args.size)]
    seconds: dict[str, list[float]] = {part: [] for part in PARTS}
    beside: dict[str, list[float]] = {part: [] for part in PARTS}
    between: list[float] = []
    for rep in range(args.reps):
        warmer = subprocess.Popen(
            [sys.executable, "-c", WARMER, str(args.gap)], stdout=subprocess.PIPE, text=True
        )
        calls = timed_calls(120.0, args.size, stop_when=warmer)
        out, _ = warmer.communicate()
        windows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        if [w["part"] for w in windows] != list(PARTS):
            print(
                f"rep {rep}: the warmer ended early ({[w['part'] for w in windows]}; exit {warmer.returncode})"
            )
            return 1
        for w in windows:
            seconds[w["part"]].append(w["ended"] - w["began"])
        for began, ms in calls:
            inside = [w["part"] for w in windows if w["began"] <= began <= w["ended"]]
            (beside[inside[0]] if inside else between).append(ms)
        print(f"rep {rep + 1}/{args.reps}: " + ", ".join(f"{w['part']} {w['ended'] - w['began']:.3f} s" for w in windows),
              flush=True)  # fmt: skip
    base = statistics.median(idle)
    print(f"\ntimed matmul {args.size}^2 fp32, idle: {summary(idle)}")
    print(
        f"{'part':<14}{'seconds (median)':>18}{'calls':>8}{'median ms':>11}{'p90 ms':>9}{'max ms':>9}{'median/idle':>13}"
    )
    rows = {}
    for part in PARTS:
        s = summary(beside[part])
        ratio = round(s["median_ms"] / base, 4) if s["n"] else None
        rows[part] = {"seconds": [round(x, 4) for x in seconds[part]], **s, "median_over_idle": ratio}
        print(f"{part:<14}{statistics.median(seconds[part]):>18.3f}{s['n']:>8}{s.get('median_ms', 0):>11.4f}"
              f"{s.get('p90_ms', 0):>9.4f}{s.get('max_ms', 0):>9.4f}{ratio if ratio is not None else '-':>13}")  # fmt: skip
    print(f"{'between parts':<14}{'':>18}{len(between):>8}{summary(between).get('median_ms', 0):>11.4f}")
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "size": args.size,
              "idle": summary(idle), "between": summary(between), "parts": rows}  # fmt: skip
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
