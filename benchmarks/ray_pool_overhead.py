"""What the Ray judge pool itself costs per judgment, and the throughput it allows on N GPUs (issue 34, item 4).

The pool (src/cuda_agent/service/ray_pool.py) runs each judgment's build as a Ray task and its GPU stages on
one `JudgeLane` actor per GPU, shipping the built extension through Ray's object store. Near-linear scaling
with N GPUs needs the pool's own cost per judgment to be small against a judgment's GPU time, and the
driver to keep N lanes fed. This measures both on a local Ray (logical GPUs, so it runs on a CPU machine):

1. **lane round trip**: `JudgeLane.judge` in build-only mode (it answers at once) with a submission and an
   extension of `--module-mb`, one lane at a time: the overhead a GPU lane pays per judgment;
2. **lanes in parallel**: the same calls from N driver threads to N lanes: judgments per second the
   driver can feed (its ceiling on N x one GPU's rate);
3. **build task round trip**: `build_on_cpu` on a submission whose task does not load (no compiler runs):
   the dispatch cost of a build.

From them, on paper: throughput on N GPUs = N x 3600 / (g + lane overhead), capped by the driver's rate,
where g is one GPU's warm verdict time (`--gpu-s`, default 2.4 s: the GPU stages of a warm verdict on an
H200, issue 34) -- and the efficiency against N x one GPU without the pool. The baseline in the same run is
the same call made in-process (no Ray).

    python benchmarks/ray_pool_overhead.py [--calls 200] [--module-mb 4] [--lanes 1 2 4 8] [--gpu-s 2.4]
                                           [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from cuda_agent.judge import JudgeConfig
from cuda_agent.service.ray_pool import NAMESPACE, JudgeLane, build_on_cpu
from cuda_agent.service.submission import Submission

ROOT = Path(__file__).resolve().parents[1]


def sample_job(module_mb: float) -> tuple[bytes, bytes, dict[str, Any]]:
    """A submission's blob, an extension of `module_mb` (random bytes: the object store cannot compress
    them) and the record a build-only lane answers from."""
    import os

    example = ROOT / "examples" / "elementwise_chain"
    files = {"model_new.py": (example / "model_new.py").read_bytes()}
    files.update({f"kernels/{p.name}": p.read_bytes() for p in (example / "kernels").iterdir() if p.is_file()})
    blob = Submission(files, (example / "model.py").read_text(), "elementwise_chain").to_blob()
    record = {"cpu_outcome": {"status": "built", "reward": 0, "reason": "CPU checks passed", "verdict": {"checks": {}}}}
    return blob, os.urandom(int(module_mb * (1 << 20))), record


def percentiles(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"p50": round(statistics.median(ordered), 3), "p99": round(ordered[int(0.99 * (len(ordered) - 1))], 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200, help="calls per measurement (default 200)")
    parser.add_argument("--module-mb", type=float, default=4.0, help="extension size shipped (default 4 MB)")
    parser.add_argument("--lanes", type=int, nargs="+", default=[1, 2, 4, 8], help="lane counts (default 1 2 4 8)")
    parser.add_argument("--gpu-s", type=float, default=2.4, help="one GPU's warm verdict time (default 2.4 s)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    import ray

    blob, module, record = sample_job(args.module_mb)
    config = JudgeConfig()
    # the baseline: the lane's call in this process, no Ray
    local = JudgeLane.__new__(JudgeLane)
    local.config, local.build_only, local.node, local.service = config, True, "local", None
    began = time.perf_counter()
    for _ in range(args.calls):
        local.judge(blob, module, record)
    in_process_ms = 1000 * (time.perf_counter() - began) / args.calls

    most = max(args.lanes)
    ray.init(num_cpus=2, num_gpus=most, namespace=NAMESPACE, log_to_driver=False, include_dashboard=False)
    try:
        lane_class = ray.remote(num_gpus=1, num_cpus=0, max_restarts=-1, max_task_retries=0)(JudgeLane)
        actors = [lane_class.remote(config, True) for _ in range(most)]
        ray.get([a.ping.remote() for a in actors])
        print(f"[ray-pool] {most} lanes up; lane round trips with a {args.module_mb:g} MB extension ...", flush=True)
        one: list[float] = []
        for _ in range(args.calls):
            t0 = time.perf_counter()
            ray.get(actors[0].judge.remote(blob, module, record))
            one.append(1000 * (time.perf_counter() - t0))
        parallel: dict[int, float] = {}
        for lanes in args.lanes:
            per_lane = max(1, args.calls // lanes)

            def feed(actor: Any, count: int = per_lane) -> None:
                for _ in range(count):
                    ray.get(actor.judge.remote(blob, module, record))

            threads = [threading.Thread(target=feed, args=(a,)) for a in actors[:lanes]]
            t0 = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            parallel[lanes] = per_lane * lanes / (time.perf_counter() - t0)
            print(f"[ray-pool] {lanes} lanes in parallel: {parallel[lanes]:.0f} judgments/s", flush=True)
        build_task = ray.remote(num_cpus=1, max_retries=0)(build_on_cpu)
        broken = Submission({"model_new.py": b"# x\n"}, "this task does not load (", "broken").to_blob()
        builds: list[float] = []
        for _ in range(max(10, args.calls // 4)):
            t0 = time.perf_counter()
            ray.get(build_task.remote(broken, config, True))
            builds.append(1000 * (time.perf_counter() - t0))
    finally:
        ray.shutdown()
    overhead_s = statistics.median(one) / 1000
    rows = []
    for lanes in args.lanes:
        ideal = lanes * 3600 / args.gpu_s
        fed = min(lanes * 3600 / (args.gpu_s + overhead_s), parallel[lanes] * 3600)
        rows.append({"gpus": lanes, "linear_per_hour": round(ideal), "with_pool_per_hour": round(fed),
                     "efficiency": round(fed / ideal, 4)})  # fmt: skip
    summary = {
        "module_mb": args.module_mb, "calls": args.calls, "gpu_s": args.gpu_s,
        "in_process_call_ms": round(in_process_ms, 3), "lane_round_trip_ms": percentiles(one),
        "lane_overhead_over_in_process": round(statistics.median(one) / max(in_process_ms, 1e-6), 1),
        "build_task_round_trip_ms": percentiles(builds),
        "driver_judgments_per_s": {str(k): round(v, 1) for k, v in parallel.items()}, "projection": rows,
    }  # fmt: skip
    print(f"\nlane round trip ({args.module_mb:g} MB extension): p50 {summary['lane_round_trip_ms']['p50']} ms, "
          f"p99 {summary['lane_round_trip_ms']['p99']} ms (in-process call {in_process_ms:.3f} ms); build task "
          f"dispatch p50 {summary['build_task_round_trip_ms']['p50']} ms")  # fmt: skip
    print(f"{'GPUs':>5} {'linear /h':>10} {'with pool /h':>13} {'efficiency':>11}")
    for row in rows:
        print(f"{row['gpus']:>5} {row['linear_per_hour']:>10} {row['with_pool_per_hour']:>13} {row['efficiency']:>11.4f}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
