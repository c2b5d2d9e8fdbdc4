"""Throughput of the synthesis pipeline through the GPU filter stage, on one GPU with several workers.

    python benchmarks/synth_throughput.py --minutes 4 --workers 10

Crawls (or loads the cached) operator catalog, then runs the full pipeline (compose, static, execution
filters with eager + torch.compile on the GPU, timing band) for `--minutes` or until `--tasks` tasks are
accepted, then drains in-flight tasks. Prints accepted tasks per hour through the filter stage,
acceptance by stage, and the requested versus accepted mix, and a final PASS/FAIL line against the
targets (>= 1000 accepted per hour; every bucket within 2 percentage points of the requested mix).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=4.0, help="composing time limit (default 4)")
    parser.add_argument("--tasks", type=int, default=100_000, help="stop after this many accepted tasks")
    parser.add_argument("--workers", type=int, default=10, help="worker processes on the GPU (default 10)")
    parser.add_argument("--band-ms", type=float, nargs=2, default=(1.0, 100.0), metavar=("LO", "HI"))
    parser.add_argument("--max-task-gb", type=float, default=4.0, help="composer's memory cap per task")
    parser.add_argument("--drain-s", type=float, default=60.0, help="wait this long for in-flight tasks")
    parser.add_argument("--timeout", type=float, default=120.0, help="per-task timeout (s)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile check")
    parser.add_argument("--transformers-families", type=int, default=40)
    parser.add_argument("--out", type=Path, help="output folder (default: a fresh temp folder)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from cuda_agent.synth import DEFAULT_MIX
    from cuda_agent.synth.catalog import CrawlOptions, load_catalog
    from cuda_agent.synth.compose import ComposeConfig
    from cuda_agent.synth.pipeline import Pipeline, PipelineConfig

    if not torch.cuda.is_available():
        print("FAIL: no CUDA GPU visible", file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name()
    total_gb = torch.cuda.get_device_properties(0).total_memory / (1 << 30)
    print(f"GPU: {gpu} ({total_gb:.0f} GiB), torch {torch.__version__}, workers {args.workers}")

    t0 = time.time()
    crawl = CrawlOptions(max_transformers_families=args.transformers_families)
    catalog = load_catalog(crawl)
    by_source: dict[str, int] = {}
    for e in catalog.entries:
        by_source[e.kind] = by_source.get(e.kind, 0) + 1
    print(f"catalog: {len(catalog)} ops {by_source} in {time.time() - t0:.1f} s")

    band = (args.band_ms[0], args.band_ms[1])
    out = args.out or Path(tempfile.mkdtemp(prefix="synth_bench_"))
    config = PipelineConfig(
        out_dir=out,
        num_tasks=args.tasks,
        mix=dict(DEFAULT_MIX),
        seed=args.seed,
        workers=args.workers,
        device="cuda",
        band_ms=band,
        compile=not args.no_compile,
        task_timeout_s=args.timeout,
        max_minutes=args.minutes,
        drain_s=args.drain_s,
        memory_fraction=min(0.95, 0.9 / args.workers),
        compose=ComposeConfig(band_ms=band, max_bytes=int(args.max_task_gb * (1 << 30))),
        crawl=crawl,
        progress=False,
    )
    pipeline = Pipeline(config, catalog=catalog)
    print(f"band {band} ms, compose target {pipeline.composer.config.target:.2f} ms, output {out}")
    last = [time.time()]

    import cuda_agent.synth.pipeline as pl

    def tick(bar: object, summary: pl.Summary) -> None:
        if time.time() - last[0] > 30:
            last[0] = time.time()
            d = summary.to_json()
            print(
                f"  [{summary.elapsed():6.0f} s] accepted {d['accepted']}, rejected {sum(summary.rejected.values())}, "
                f"{d['accepted_per_hour']}/h",
                flush=True,
            )

    pl._tick = tick  # periodic one-line progress instead of a bar (logs stay readable)
    summary = pipeline.run()
    d = summary.to_json()
    print()
    print(summary.format())
    print()
    # Eager-time distribution of accepted tasks, to see how the band is used.
    from cuda_agent.synth.dataset import accepted_records, read_journal

    acc = accepted_records(read_journal(out / "journal.jsonl"))
    times = sorted(r["eager_ms"] for r in acc if r.get("eager_ms") is not None)
    if times:
        q = [times[int(p * (len(times) - 1))] for p in (0.1, 0.5, 0.9)]
        comp = sorted(r["compile_ms"] for r in acc if r.get("compile_ms"))
        cq = comp[len(comp) // 2] if comp else float("nan")
        print(f"eager ms p10/p50/p90: {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f}; compiled p50 {cq:.2f} ms")
    walls = sorted(r.get("wall_s", 0) for r in read_journal(out / "journal.jsonl") if r.get("wall_s"))
    if walls:
        print(
            f"worker seconds per task p50/p90: {walls[len(walls) // 2]:.1f} / {walls[int(0.9 * (len(walls) - 1))]:.1f}"
        )
    dev = max(abs(d["accepted_mix"][b] - d["requested_mix"][b]) for b in d["requested_mix"]) * 100
    rate = d["accepted_per_hour"]
    ok = rate >= 1000 and dev <= 2.0
    print(
        json.dumps(
            {
                "accepted_per_hour": rate,
                "max_mix_deviation_pp": round(dev, 2),
                "accepted": d["accepted"],
                "gpu": gpu,
                "workers": args.workers,
                "band_ms": band,
            }
        )
    )
    print(
        f"{'PASS' if ok else 'FAIL'}: {rate:.0f} accepted/hour (target 1000), max mix deviation {dev:.2f} pp (target 2)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
