"""Judge latency and throughput on one GPU: the original CUDA-Agent one-shot path against our judge service.

    python benchmarks/judge_throughput.py [--batch 60] [--warm-reps 3] [--out DIR]

One run, on the same honest submissions (examples/elementwise_chain, row_softmax, layernorm, gemm_bias_relu):

  a. original: each example through the original workspace's path (benchmarks/original_workspace.py): a
     fresh `cpp_extension.load` of every source into an empty build folder, then separate verification and
     profiling processes that import torch, reload the extension and time eager and torch.compile again;
  b. ours, cold: each example judged once by a JudgeService (baselines measured, then cached);
  c. ours, warm: `--warm-reps` variants per example, each with a comment appended to its first `.cu`
     (so exactly one file recompiles), judged one at a time: submission -> verdict latency;
  d. cold build: per example, a variant with both its `.cu` and `_binding.cpp` changed, built with
     `build_extension` (the judge's binding.cpp object and any precompiled header are warm from b);
  e. A/A idle: `--aa-reps` variants of `--aa-example` judged one at a time, nothing else running;
  f. throughput: `--batch` variants cycling over the examples through `service.judge_many` (builds in
     parallel on the CPU, GPU work serialised); verdicts/hour; the A/A example's candidate times inside
     the batch over its idle time give the A/A ratio.

The judge's caches (objects, baselines) start empty in a fresh folder unless `--cache-dir` names one.
Prints a table (p50/p90/mean latency, verdicts/hour), the ratios to the original, the cold-build times and
the A/A ratio; writes judge_throughput.json and verdicts.jsonl (every verdict of ours) to `--out`; ends
with one PASS/FAIL line per target (on an H200: warm median <= 5 s; cold build median <= 8 s;
>= 1000 verdicts/hour; |A/A - 1| <= 0.02). Exit code 0 only if all pass; 2 when no GPU or no judge service.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(REPO / "src"))

HONEST_EXAMPLES = ("elementwise_chain", "row_softmax", "layernorm", "gemm_bias_relu")
TARGET_WARM_S = 5.0
TARGET_COLD_BUILD_S = 8.0
TARGET_PER_HOUR = 1000.0
TARGET_AA = 0.02


# ---- small helpers --------------------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 1]); nan for no values."""
    data = sorted(values)
    if not data:
        return float("nan")
    pos = q * (len(data) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summarize(values: Iterable[float]) -> dict[str, Any]:
    data = list(values)
    if not data:
        return {"n": 0, "p50": None, "p90": None, "mean": None, "min": None, "max": None}
    return {
        "n": len(data),
        "p50": round(percentile(data, 0.5), 4),
        "p90": round(percentile(data, 0.9), 4),
        "mean": round(statistics.fmean(data), 4),
        "min": round(min(data), 4),
        "max": round(max(data), 4),
    }


def fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None or value != value else format(value, spec)


def make_variant(submission: Path, root: Path, tag: str, binding_too: bool = False) -> Path:
    """Copy `submission` to root/tag/<name> (the folder name stays the task name) and append a unique
    comment to its first kernels/*.cu (and, with `binding_too`, its first kernels/*_binding.cpp)."""
    dest = root / tag / submission.name
    shutil.copytree(submission, dest, ignore=shutil.ignore_patterns("__pycache__", "*.so", "build"))
    kernels = dest / "kernels"
    targets = sorted(kernels.glob("*.cu"))[:1]
    if binding_too:
        targets += sorted(kernels.glob("*_binding.cpp"))[:1]
    if not targets:
        raise FileNotFoundError(f"{submission}: no kernels/*.cu to change")
    for path in targets:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"\n// variant {uuid.uuid4()}\n")
    return dest


def brief(verdict: Any) -> dict[str, Any]:
    """The figures of a verdict this benchmark reports."""
    timing = verdict.timing
    checks = verdict.checks if isinstance(verdict.checks, dict) else {}
    build = checks.get("build")
    return {
        "status": verdict.status.value,
        "reward": verdict.reward,
        "reason": verdict.reason if verdict.status.value != "ok" else "",
        "candidate_ms": timing.candidate_ms if timing else None,
        "eager_ms": timing.eager_ms if timing else None,
        "compile_ms": timing.compile_ms if timing else None,
        "baseline_source": timing.baseline_source if timing else None,
        "stage_seconds": dict(verdict.stage_seconds),
        "rounds": timing.rounds if timing else None,
        "traced_rounds": checks.get("traced_timed_rounds"),
        "spot_checks": checks.get("timed_spot_checks"),
        "worker_calls": dict(checks.get("worker_calls", {})),
        "host_clock": dict(checks.get("host_clock", {})),
        "draw": _draw_policy(timing.policy if timing else {}),
        "compiled": list(build.get("compiled", [])) if isinstance(build, dict) else None,
        "cached": list(build.get("cached", [])) if isinstance(build, dict) else None,
    }


def _draw_policy(policy: dict[str, Any]) -> dict[str, Any]:
    """How the timed rounds' inputs were drawn (inside each round, under a cover spin) and what it cost."""
    host = policy.get("draw_host_ms") or {}
    return {"cover_ms": policy.get("draw_cover_ms"), "reference_draw_ms": host.get("reference"),
            "candidate_draw_ms": host.get("candidate"), "pad_ms": policy.get("pad_ms")}  # fmt: skip


def describe(b: dict[str, Any]) -> str:
    if b["status"] != "ok":
        return f"{b['status']} reward {b['reward']}: {b['reason'][:160]}"
    return (f"ok reward {b['reward']}, candidate {fmt(b['candidate_ms'], '.4f')} ms, eager "
            f"{fmt(b['eager_ms'], '.4f')} ms, compile {fmt(b['compile_ms'], '.4f')} ms "
            f"(baselines {b['baseline_source']}), compiled {b['compiled']}")  # fmt: skip


class Journal:
    """verdicts.jsonl: one line per verdict of ours, written as it arrives."""

    def __init__(self, path: Path) -> None:
        self.handle = path.open("w", encoding="utf-8")

    def write(self, phase: str, example: str, index: int, wall_s: float | None, verdict: Any | None,
              error: str = "") -> None:  # fmt: skip
        record = {"phase": phase, "example": example, "index": index,
                  "wall_s": None if wall_s is None else round(wall_s, 4), "error": error,
                  "verdict": json.loads(verdict.to_json()) if verdict is not None else None}  # fmt: skip
        self.handle.write(json.dumps(record) + "\n")
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


def judge_timed(service: Any, path: Path) -> tuple[Any | None, float, str]:
    """service.judge(path) with its wall time; an exception becomes an error text, never propagates."""
    start = time.monotonic()
    try:
        verdict = service.judge(path)
    except Exception as exc:
        return None, time.monotonic() - start, f"{type(exc).__name__}: {exc}"
    return verdict, time.monotonic() - start, ""


# ---- phases ---------------------------------------------------------------------------------------


def phase_original(
    examples: dict[str, Path], reps: int, iters: int, warmup: int, inductor_cache: Path
) -> list[dict[str, Any]]:
    if str(BENCH_DIR) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR))
    from original_workspace import OriginalConfig, run_one_shot

    # Its own torch.compile cache, empty at the start of each benchmark run: the first profile of a task
    # compiles the baseline from scratch, as for the first candidate of a task in the original workspace.
    config = OriginalConfig(iters=iters, warmup=warmup, env={"TORCHINDUCTOR_CACHE_DIR": str(inductor_cache)})
    results = []
    total = reps * len(examples)
    for rep in range(reps):
        for name, path in examples.items():
            print(
                f"  [original {len(results) + 1}/{total}] {name}: compile + verify + profile ...", flush=True
            )
            r = run_one_shot(path, config)
            r["example"], r["rep"] = name, rep
            results.append(r)
            s = r["seconds"]
            line = (f"  [original {len(results)}/{total}] {name}: compile {fmt(s.get('compile'), '.1f')} s, "
                    f"verify {fmt(s.get('verify'), '.1f')} s, profile {fmt(s.get('profile'), '.1f')} s, "
                    f"total {r['total_s']:.1f} s")  # fmt: skip
            if r["ok"]:
                line += (f"; candidate {fmt(r['candidate_ms'], '.4f')} ms, eager {fmt(r['eager_ms'], '.4f')} ms, "
                         f"compile {fmt(r['compile_ms'], '.4f')} ms")  # fmt: skip
            else:
                last = r["error"].strip().splitlines()[-1:] or [""]
                line += f"; FAILED in {r['failed_phase']}: {last[0][:200]}"
            print(line, flush=True)
    return results


def phase_sequential(service: Any, journal: Journal, phase: str, label: str,
                     jobs: list[tuple[str, Path]], expected: dict[str, dict[str, Any]] | None) -> list[dict[str, Any]]:  # fmt: skip
    """Judge `jobs` one at a time; returns one record per job (example, wall_s, verdict figures, error)."""
    records = []
    for i, (name, path) in enumerate(jobs):
        verdict, wall, error = judge_timed(service, path)
        journal.write(phase, name, i, wall, verdict, error)
        b = brief(verdict) if verdict is not None else None
        records.append({"example": name, "wall_s": round(wall, 4), "error": error, "verdict": b})
        text = describe(b) if b else f"ERROR {error}"
        print(f"  [{label} {i + 1}/{len(jobs)}] {name}: {wall:.2f} s, {text}", flush=True)
        if expected is not None and b is not None and name in expected and expected[name] is not None:
            want = expected[name]
            if b["status"] != "ok" or b["reward"] != want["reward"]:
                print(f"    WARNING: {name} gave {b['status']} reward {b['reward']}, the cold run gave "
                      f"{want['status']} reward {want['reward']}", flush=True)  # fmt: skip
    return records


def phase_cold_build(examples: dict[str, Path], variants: Path) -> list[dict[str, Any]]:
    from cuda_agent.judge.trusted.build import BuildConfig, build_extension

    records = []
    for i, (name, path) in enumerate(examples.items()):
        variant = make_variant(path, variants, f"coldbuild-{i}", binding_too=True)
        out = variants / f"coldbuild-{i}-out"
        start = time.monotonic()
        try:
            result = build_extension(variant / "kernels", out, BuildConfig())
            wall, error = time.monotonic() - start, ""
        except Exception as exc:
            result, wall, error = None, time.monotonic() - start, f"{type(exc).__name__}: {exc}"
        rec = {"example": name, "wall_s": round(wall, 4), "error": error,
               "ok": bool(result and result.ok), "build_seconds": round(result.seconds, 4) if result else None,
               "compiled": list(result.compiled) if result else [], "cached": list(result.cached) if result else [],
               "log": (result.log[-2000:] if result and not result.ok else "")}  # fmt: skip
        records.append(rec)
        status = "ok" if rec["ok"] else f"FAILED {error or rec['log'][-300:]}"
        print(f"  [cold build {i + 1}/{len(examples)}] {name}: {wall:.2f} s, {status}; compiled "
              f"{rec['compiled']}, cached {rec['cached']}", flush=True)  # fmt: skip
    return records


def phase_batch(service: Any, journal: Journal, jobs: list[tuple[str, Path]],
                expected: dict[str, dict[str, Any] | None]) -> tuple[list[dict[str, Any]], float, str]:  # fmt: skip
    """Everything through judge_many; returns per-job records (in submission order), the wall time, error."""
    records: list[dict[str, Any]] = [
        {"example": name, "done_at_s": None, "verdict": None} for name, _ in jobs
    ]
    done = 0
    last_print = time.monotonic()
    start = time.monotonic()
    error = ""
    try:
        for index, verdict in service.judge_many([path for _, path in jobs]):
            at = time.monotonic() - start
            done += 1
            name = jobs[index][0]
            journal.write("batch", name, index, at, verdict)
            b = brief(verdict)
            records[index].update({"done_at_s": round(at, 4), "verdict": b})
            want = expected.get(name)
            if b["status"] != "ok" or (want is not None and b["reward"] != want["reward"]):
                print(f"    WARNING: batch #{index} {name}: {describe(b)}", flush=True)
            if time.monotonic() - last_print > 15 or done == len(jobs):
                last_print = time.monotonic()
                print(f"  [batch {done}/{len(jobs)}] {at:.1f} s, {done / at * 3600:.0f} verdicts/h so far",
                      flush=True)  # fmt: skip
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        print(f"  batch stopped by {error}", flush=True)
    wall = time.monotonic() - start
    return records, wall, error


# ---- main -----------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", nargs="+", default=list(HONEST_EXAMPLES),
                        help="example folders (names under --examples-dir, or paths); default the 4 honest ones")  # fmt: skip
    parser.add_argument("--examples-dir", type=Path, default=REPO / "examples")
    parser.add_argument("--original-reps", type=int, default=1,
                        help="runs of each example through the original path (default 1; 0 skips it)")  # fmt: skip
    parser.add_argument("--original-examples", nargs="+", metavar="NAME",
                        help="run the original path on these examples only (default: all; it costs ~50 s each)")  # fmt: skip
    parser.add_argument("--original-iters", type=int, default=100,
                        help="original profiling: timed calls per model (default 100)")  # fmt: skip
    parser.add_argument("--original-warmup", type=int, default=10,
                        help="original profiling: warm-up calls per model (default 10)")  # fmt: skip
    parser.add_argument(
        "--warm-reps", type=int, default=3, help="warm variants judged per example (default 3)"
    )
    parser.add_argument("--aa-example", default="row_softmax", help="example timed for the A/A ratio")
    parser.add_argument(
        "--aa-reps", type=int, default=5, help="A/A variants judged on an idle machine (default 5)"
    )
    parser.add_argument("--batch", type=int, default=60, help="variants through judge_many (default 60)")
    parser.add_argument("--fixed-budget-timing", action="store_true",
                        help="time every judgment for the full budget (TimingConfig.sequential off; issue 34)")
    parser.add_argument("--build-workers", type=int, default=None,
                        help="the service's parallel builds (default: the service's, cpu_count - 2)")  # fmt: skip
    parser.add_argument("--cache-dir", type=Path,
                        help="the judge's cache root (CUDA_AGENT_CACHE); default a fresh folder under --out")  # fmt: skip
    parser.add_argument("--out", type=Path, help="output folder (default: a fresh temp folder)")
    parser.add_argument("--keep-variants", action="store_true", help="keep the variant submissions")
    parser.add_argument("--no-cold-build", action="store_true",
                        help="skip phase d (cold builds); with --aa-reps 0 and --batch 0 the run is a+b+c only")  # fmt: skip
    args = parser.parse_args()

    examples: dict[str, Path] = {}
    for item in args.examples:
        path = Path(item) if Path(item).is_dir() else args.examples_dir / item
        if not (path / "model.py").is_file() or not (path / "kernels").is_dir():
            parser.error(f"{item}: not a submission folder (model.py, model_new.py, kernels/)")
        examples[path.name] = path.resolve()
    if args.aa_example not in examples:
        parser.error(f"--aa-example {args.aa_example} is not among --examples ({', '.join(examples)})")

    import torch

    if not torch.cuda.is_available():
        print("FAIL: no CUDA GPU visible: this benchmark runs and times kernels on a GPU", file=sys.stderr)
        return 2
    out = (args.out or Path(tempfile.mkdtemp(prefix="judge_bench_"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cache = (args.cache_dir or out / "cache").resolve()
    cache.mkdir(parents=True, exist_ok=True)
    os.environ["CUDA_AGENT_CACHE"] = str(cache)  # objects, baselines and anything else the judge caches
    try:
        from cuda_agent.judge.config import JudgeConfig, JudgeUnavailable, TimingConfig
        from cuda_agent.judge.decide.service import JudgeService
    except ImportError as exc:
        print(f"FAIL: the judge service is not importable: {exc}", file=sys.stderr)
        return 2

    gpu = torch.cuda.get_device_name()
    print(
        f"GPU: {gpu}, torch {torch.__version__}, {os.cpu_count()} CPU cores, examples {', '.join(examples)}"
    )
    print(f"output {out}, judge cache {cache}", flush=True)
    bench_start = time.monotonic()
    variants = Path(tempfile.mkdtemp(prefix="judge_bench_variants_"))
    journal = Journal(out / "verdicts.jsonl")
    report: dict[str, Any] = {"gpu": gpu, "torch": torch.__version__, "cpu_count": os.cpu_count(),
                              "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                              "examples": {k: str(v) for k, v in examples.items()}}  # fmt: skip
    try:
        # a. the original one-shot path, before our service holds anything
        original: list[dict[str, Any]] = []
        if args.original_reps > 0:
            print(f"\n== a. original one-shot path ({args.original_reps} x {len(args.original_examples or examples)}) ==", flush=True)
            chosen = {k: v for k, v in examples.items() if not args.original_examples or k in args.original_examples}
            original = phase_original(
                chosen,
                args.original_reps,
                args.original_iters,
                args.original_warmup,
                cache / "inductor-original",
            )
        report["original"] = original

        print("\n== starting the judge service ==", flush=True)
        t0 = time.monotonic()
        try:
            config = JudgeConfig(timing=TimingConfig(sequential=not args.fixed_budget_timing))
            service_cm = JudgeService(config=config, build_workers=args.build_workers)
            service = service_cm.__enter__()
        except JudgeUnavailable as exc:
            print(f"FAIL: the judge cannot run here: {exc}", file=sys.stderr)
            return 2
        report["service_start_s"] = round(time.monotonic() - t0, 3)
        print(f"  service up in {report['service_start_s']:.1f} s", flush=True)
        try:
            # b. prime: every example once, baselines measured
            print(f"\n== b. ours, cold: each example once ({len(examples)}) ==", flush=True)
            jobs = [(name, make_variant_copy(path, variants, "prime")) for name, path in examples.items()]
            prime = phase_sequential(service, journal, "prime", "cold", jobs, None)
            expected = {r["example"]: r["verdict"] for r in prime}
            report["prime"] = prime

            # c. warm latency: one .cu changed, baselines cached
            print(
                f"\n== c. ours, warm: {args.warm_reps} variants per example, one .cu changed ==", flush=True
            )
            jobs = [(name, make_variant(path, variants, f"warm-{rep}-{i}"))
                    for rep in range(args.warm_reps) for i, (name, path) in enumerate(examples.items())]  # fmt: skip
            warm = phase_sequential(service, journal, "warm", "warm", jobs, expected)
            report["warm"] = warm

            # d. cold build of a two-file change
            cold_builds: list[dict[str, Any]] = []
            if not args.no_cold_build:
                print("\n== d. cold build: .cu and _binding.cpp changed, build_extension ==", flush=True)
                cold_builds = phase_cold_build(examples, variants)
            report["cold_build"] = cold_builds

            # e. A/A on an idle machine
            aa_idle: list[dict[str, Any]] = []
            if args.aa_reps > 0:
                print(f"\n== e. A/A idle: {args.aa_reps} variants of {args.aa_example}, one at a time ==", flush=True)
                jobs = [(args.aa_example, make_variant(examples[args.aa_example], variants, f"aa-{k}"))
                        for k in range(args.aa_reps)]  # fmt: skip
                aa_idle = phase_sequential(service, journal, "aa_idle", "A/A idle", jobs, expected)
            report["aa_idle"] = aa_idle

            # f. throughput: builds in parallel, GPU work serialised
            names = list(examples)
            jobs = [(names[i % len(names)], make_variant(examples[names[i % len(names)]], variants, f"batch-{i}"))
                    for i in range(args.batch)]  # fmt: skip
            batch, batch_wall, batch_error = [], 0.0, ""
            if args.batch > 0:
                print(f"\n== f. throughput: {args.batch} variants through judge_many ==", flush=True)
                batch, batch_wall, batch_error = phase_batch(service, journal, jobs, expected)
            report["batch"] = {"records": batch, "wall_s": round(batch_wall, 3), "error": batch_error,
                               "sequential_timing": not args.fixed_budget_timing}  # fmt: skip
        finally:
            service_cm.__exit__(None, None, None)
    finally:
        journal.close()
        if not args.keep_variants:
            shutil.rmtree(variants, ignore_errors=True)
        else:
            report["variants_dir"] = str(variants)

    return finish(report, out, time.monotonic() - bench_start)


def make_variant_copy(submission: Path, root: Path, tag: str) -> Path:
    """An unchanged copy of `submission` under root/tag/<name>."""
    dest = root / tag / submission.name
    shutil.copytree(submission, dest, ignore=shutil.ignore_patterns("__pycache__", "*.so", "build"))
    return dest


def _ok(record: dict[str, Any]) -> bool:
    return record.get("verdict") is not None and record["verdict"]["status"] == "ok"


def finish(report: dict[str, Any], out: Path, bench_s: float) -> int:
    """Summary table, ratios, JSON files and the PASS/FAIL lines. Returns the exit code."""
    original = [r for r in report["original"] if r["ok"]]
    prime, warm, aa_idle = report["prime"], report["warm"], report["aa_idle"]
    batch = report["batch"]["records"]
    batch_wall = report["batch"]["wall_s"]
    aa_name = report["args"]["aa_example"]

    orig_lat = summarize(r["total_s"] for r in original)
    prime_lat = summarize(r["wall_s"] for r in prime)
    warm_lat = summarize(r["wall_s"] for r in warm)
    batch_done = [r for r in batch if r["verdict"] is not None]
    batch_ok = [r for r in batch_done if r["verdict"]["status"] == "ok"]
    per_hour = len(batch_done) / batch_wall * 3600 if batch_wall > 0 and batch_done else 0.0
    orig_per_hour = 3600 / orig_lat["mean"] if orig_lat["mean"] else None

    # "measured" on a fresh cache; with --cache-dir pointing at a warm one, the cold row is not cold
    sources = "/".join(sorted({r["verdict"]["baseline_source"] or "-" for r in prime if _ok(r)})) or "-"

    def rate(s: dict[str, Any]) -> float | None:
        return 3600 / s["mean"] if s["mean"] else None

    print("\n== summary ==")
    header = f"{'path':<46} {'n':>4} {'p50 s':>8} {'p90 s':>8} {'mean s':>8} {'verdicts/h':>11}"
    print(header)
    print("-" * len(header))
    rows = [
        ("original one-shot (compile + verify + profile)", orig_lat, rate(orig_lat)),
        (f"ours, cold (baselines {sources})", prime_lat, rate(prime_lat)),
        ("ours, warm (one .cu changed), one at a time", warm_lat, rate(warm_lat)),
        (f"ours, judge_many batch of {len(batch)}", {"n": len(batch_done), "p50": None, "p90": None, "mean": None},
         per_hour),
    ]  # fmt: skip
    for label, s, r in rows:
        print(
            f"{label:<46} {s['n']:>4} {fmt(s['p50']):>8} {fmt(s['p90']):>8} {fmt(s['mean']):>8} {fmt(r, '.0f'):>11}"
        )

    if original:
        phases = {
            p: statistics.fmean(r["seconds"].get(p, 0.0) for r in original)
            for p in ("compile", "verify", "profile")
        }
        print("original, mean seconds per phase: " + ", ".join(f"{p} {v:.1f}" for p, v in phases.items()))
    failed_original = [r for r in report["original"] if not r["ok"]]
    if failed_original:
        print(f"original path: {len(failed_original)} run(s) failed: "
              + "; ".join(f"{r['example']} in {r['failed_phase']}" for r in failed_original))  # fmt: skip
    by_example = {}
    for name in report["examples"]:
        mine = [r["wall_s"] for r in warm if r["example"] == name]
        by_example[name] = summarize(mine)
        print(f"  warm {name:<20} n {len(mine)}, p50 {fmt(by_example[name]['p50'])} s, "
              f"p90 {fmt(by_example[name]['p90'])} s")  # fmt: skip

    stage_medians = warm_stage_medians(warm)
    print_stage_table(stage_medians)
    call_medians = warm_call_medians(warm)
    print_call_table(call_medians)
    print_host_clock(warm)

    latency_ratio = orig_lat["mean"] / warm_lat["p50"] if orig_lat["mean"] and warm_lat["p50"] else None
    throughput_ratio = per_hour / orig_per_hour if orig_per_hour and per_hour else None
    print(f"latency: original mean {fmt(orig_lat['mean'], '.1f')} s / ours warm median "
          f"{fmt(warm_lat['p50'])} s = {fmt(latency_ratio, '.1f')}x")  # fmt: skip
    print(f"throughput: ours {per_hour:.0f}/h / original {fmt(orig_per_hour, '.0f')}/h = "
          f"{fmt(throughput_ratio, '.1f')}x")  # fmt: skip

    cold = report["cold_build"]
    cold_ok = [r for r in cold if r["ok"]]
    cold_median = statistics.median(r["wall_s"] for r in cold_ok) if cold_ok else None
    print("cold build (.cu + _binding.cpp changed): "
          + ", ".join(f"{r['example']} {r['wall_s']:.2f} s{'' if r['ok'] else ' FAILED'}" for r in cold)
          + f"; median {fmt(cold_median)} s")  # fmt: skip

    idle_times = [r["verdict"]["candidate_ms"] for r in aa_idle if _ok(r) and r["verdict"]["candidate_ms"]]
    busy_times = [r["verdict"]["candidate_ms"] for r in batch
                  if r["example"] == aa_name and _ok(r) and r["verdict"]["candidate_ms"]]  # fmt: skip
    idle_median = statistics.median(idle_times) if idle_times else None
    busy_median = statistics.median(busy_times) if busy_times else None
    aa_ratio = busy_median / idle_median if idle_median and busy_median else None
    print(f"A/A {aa_name}: idle median {fmt(idle_median, '.4f')} ms (n {len(idle_times)}), busy median "
          f"{fmt(busy_median, '.4f')} ms (n {len(busy_times)}) -> ratio {fmt(aa_ratio, '.4f')}")  # fmt: skip
    print(f"benchmark wall time {bench_s / 60:.1f} min")

    warm_bad = [r for r in warm if not _ok(r)]
    batch_bad = len(batch) - len(batch_ok)
    skipped = {"cold_build": not cold, "throughput": not batch, "aa_ratio": not aa_idle or not batch}
    checks = {
        "warm_median": (warm_lat["p50"] is not None and warm_lat["p50"] <= TARGET_WARM_S and not warm_bad,
                        f"warm latency median {fmt(warm_lat['p50'])} s (target <= {TARGET_WARM_S:g} s)"
                        + (f", {len(warm_bad)} warm verdict(s) not ok" if warm_bad else "")),
        "cold_build": (cold_median is not None and cold_median <= TARGET_COLD_BUILD_S and len(cold_ok) == len(cold),
                       f"cold build median {fmt(cold_median)} s (target <= {TARGET_COLD_BUILD_S:g} s)"
                       + (f", {len(cold) - len(cold_ok)} build(s) failed" if len(cold_ok) != len(cold) else "")),
        "throughput": (per_hour >= TARGET_PER_HOUR and batch_bad == 0 and not report["batch"]["error"],
                       f"{per_hour:.0f} verdicts/hour (target >= {TARGET_PER_HOUR:.0f})"
                       + (f", {batch_bad} of {len(batch)} batch verdicts not ok" if batch_bad else "")
                       + (f", batch error {report['batch']['error']}" if report["batch"]["error"] else "")),
        "aa_ratio": (aa_ratio is not None and abs(aa_ratio - 1) <= TARGET_AA,
                     f"A/A ratio {fmt(aa_ratio, '.4f')} (target 1 +/- {TARGET_AA:g})"),
    }  # fmt: skip

    summary = {
        "gpu": report["gpu"],
        "original_latency_s": orig_lat,
        "original_per_hour": None if orig_per_hour is None else round(orig_per_hour, 1),
        "cold_latency_s": prime_lat,
        "warm_latency_s": warm_lat,
        "warm_latency_by_example_s": by_example,
        "batch_per_hour": round(per_hour, 1),
        "batch_wall_s": batch_wall,
        "batch_verdicts": len(batch_done),
        "batch_not_ok": batch_bad,
        "latency_ratio": None if latency_ratio is None else round(latency_ratio, 2),
        "throughput_ratio": None if throughput_ratio is None else round(throughput_ratio, 2),
        "cold_build_median_s": None if cold_median is None else round(cold_median, 3),
        "aa_idle_median_ms": idle_median,
        "aa_busy_median_ms": busy_median,
        "aa_ratio": None if aa_ratio is None else round(aa_ratio, 4),
        "service_start_s": report.get("service_start_s"),
        "benchmark_s": round(bench_s, 1),
        "warm_stage_medians_s": stage_medians,
        "warm_worker_call_medians": call_medians,
        "pass": {k: bool(v[0]) for k, v in checks.items() if not skipped.get(k)},
        "skipped": sorted(k for k, v in skipped.items() if v),
    }
    report["summary"] = summary
    (out / "judge_throughput.json").write_text(json.dumps(report, indent=1, default=str))
    print(
        json.dumps({k: v for k, v in summary.items() if k not in ("warm_latency_by_example_s", "warm_stage_medians_s")},
                   default=str)
    )
    print(f"wrote {out / 'judge_throughput.json'} and {out / 'verdicts.jsonl'}")
    for key, (passed, text) in checks.items():
        if skipped.get(key):
            print(f"SKIP: {key} (its phase was not run)", flush=True)
        else:
            print(f"{'PASS' if passed else 'FAIL'}: {text}", flush=True)
    return 0 if all(passed for key, (passed, _) in checks.items() if not skipped.get(key)) else 1


# The stages of a verdict's stage_seconds, in judgment order; parts nested inside another are indented
# (spot checks and baseline windows run inside timing; the reference is prepared while the build runs).
STAGE_ORDER = (("build", 0), ("build_compile", 1), ("build_link", 1), ("reference", 1), ("worker_wait", 0),
               ("load", 0), ("verify", 0),
               ("compare_wait", 1), ("timing", 0), ("timing_setup", 1), ("timed_rounds", 1), ("traced_rounds", 1),
               ("spot_checks", 1), ("baseline_windows", 1), ("total", 0))  # fmt: skip
COUNTS = ("rounds", "traced_rounds", "spot_checks")


def warm_stage_medians(warm: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per example (and 'all'), the median seconds of every stage over the warm verdicts that were ok,
    and the median counts that explain the timing stage (timed rounds, traced rounds, spot checks)."""
    groups: dict[str, list[dict[str, Any]]] = {"all": []}
    for r in warm:
        if _ok(r):
            groups.setdefault(r["example"], []).append(r["verdict"])
            groups["all"].append(r["verdict"])
    medians: dict[str, dict[str, float | None]] = {}
    for name, verdicts in groups.items():
        keys = sorted({k for v in verdicts for k in v["stage_seconds"]})
        row: dict[str, float | None] = {
            k: round(statistics.median(v["stage_seconds"].get(k, 0.0) for v in verdicts), 3) for k in keys
        }
        for count in COUNTS:
            values = [v.get(count) for v in verdicts if v.get(count) is not None]
            row[f"n_{count}"] = statistics.median(values) if values else None
        medians[name] = row
    return medians


def print_stage_table(medians: dict[str, dict[str, float | None]]) -> None:
    """Where warm time goes: one column per example, one row per stage (median seconds)."""
    if not medians.get("all"):
        return
    names = [n for n in medians if n != "all"] + ["all"]
    known = [k for k, _ in STAGE_ORDER]
    extra = sorted({k for row in medians.values() for k in row if k not in known and not k.startswith("n_")})
    rows = [*STAGE_ORDER, *((k, 1) for k in extra)]
    print("\nwarm, median seconds per stage (indented: inside or beside the stage above):")
    print(f"{'stage':<20}" + "".join(f"{n[:16]:>17}" for n in names))
    for key, depth in rows:
        label = ("  " * depth + key)[:20]
        print(f"{label:<20}" + "".join(f"{fmt(medians[n].get(key), '.3f'):>17}" for n in names))
    for count in COUNTS:
        print(f"{'n ' + count:<20}" + "".join(f"{fmt(medians[n].get('n_' + count), '.0f'):>17}" for n in names))


def warm_call_medians(warm: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per worker command ('reference.compare_timing', 'candidate.time_round', ...), over the warm ok
    verdicts: the median number of calls per judgment, seconds per judgment and milliseconds per call."""
    per: dict[str, list[tuple[int, float]]] = {}
    verdicts = [r["verdict"] for r in warm if _ok(r)]
    for v in verdicts:
        for command, entry in (v.get("worker_calls") or {}).items():
            per.setdefault(command, []).append((int(entry[0]), float(entry[1])))
    out = {}
    for command, entries in per.items():
        entries += [(0, 0.0)] * (len(verdicts) - len(entries))  # judgments that never made this call
        out[command] = {
            "calls": statistics.median(n for n, _ in entries),
            "seconds": round(statistics.median(t for _, t in entries), 4),
            "ms_per_call": round(1000 * sum(t for _, t in entries) / max(1, sum(n for n, _ in entries)), 3),
        }
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["seconds"]))


def print_host_clock(warm: list[dict[str, Any]]) -> None:
    """Per example: the host clock's per-call overhead (the reference's) against the candidate's own, and
    how many of the candidate's rounds the clock charged (an honest kernel should see few)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in warm:
        clock = r["verdict"].get("host_clock") or {}
        if _ok(r) and clock.get("candidate_overhead_ms") is not None:
            rows.setdefault(r["example"], []).append({**clock, **(r["verdict"].get("draw") or {}),
                                                      "rounds": r["verdict"].get("rounds") or 0})  # fmt: skip
    if not rows:
        return
    print("\nwarm, host clock per call (median ms): the reference's overhead + margin vs the candidate's own")
    print("  (flush: the pads' allowance, the reference's, and the candidate's own measurement beside it)")
    print("  (stamped: rounds whose wall ended at the kernel's stamp on the reply, of all, summed; draw: a")
    print("   draw's host time in the reference, the cover spin each call's in-round draw ran under, and the pad)")
    print(f"{'example':<20}{'overhead':>10}{'margin':>8}{'candidate':>11}{'charged':>12}{'flush':>9}{'own':>9}"
          f"{'stamped':>14}{'draw':>9}{'cover':>9}{'pad':>9}")  # fmt: skip
    for name, clocks in rows.items():
        def med(key: str, clocks: list[dict[str, Any]] = clocks) -> float:
            return statistics.median(float(c.get(key) or 0.0) for c in clocks)

        def flush(key: str, clocks: list[dict[str, Any]] = clocks) -> str:
            return _median_of(clocks, "flush_ms", key)

        charged = f"{med('candidate_rounds_charged_by_host_clock'):.0f}/{med('rounds'):.0f}"
        counts = [c["rounds_stamped"] for c in clocks if isinstance(c.get("rounds_stamped"), list)]
        stamped = f"{sum(n for n, _ in counts)}/{sum(t for _, t in counts)}" if counts else "-"
        print(f"{name[:20]:<20}{med('overhead_ms'):>10.4f}{med('margin_ms'):>8.4f}{med('candidate_overhead_ms'):>11.4f}"
              f"{charged:>12}{flush('allowance'):>9}{flush('candidate_measured'):>9}{stamped:>14}"
              f"{med('reference_draw_ms'):>9.3f}{med('cover_ms'):>9.3f}{med('pad_ms'):>9.3f}")  # fmt: skip
    print("\nwarm, where the candidate's per-call overhead exceeds the reference's (median ms over its rounds):")
    print("  timed: every timed round; after frozen: those right after a frozen window; other: the rest")
    print(f"{'example':<20}{'timed':>10}{'after frozen':>14}{'other':>10}")
    for name, clocks in rows.items():
        timed, after, other = (_median_of(clocks, "excess_median_ms", k) for k in ("timed", "after_frozen", "other_timed"))
        print(f"{name[:20]:<20}{timed:>10}{after:>14}{other:>10}")


def _median_of(clocks: list[dict[str, Any]], field: str, key: str) -> str:
    """The median of `clock[field][key]` over the verdicts' host clocks that have it, printed (or '-')."""
    values = [f[key] for c in clocks if isinstance(f := c.get(field), dict) and f.get(key) is not None]
    return f"{statistics.median(values):.4f}" if values else "-"


def print_call_table(medians: dict[str, dict[str, float]]) -> None:
    """Which worker exchanges the warm judgments waited on (round trips as the parent saw them)."""
    if not medians:
        return
    print("\nwarm, worker round trips per judgment (median; ms per call over all):")
    print(f"{'command':<34}{'calls':>8}{'seconds':>10}{'ms/call':>10}")
    for command, row in medians.items():
        if row["seconds"] >= 0.005:
            print(f"{command[:34]:<34}{row['calls']:>8.0f}{row['seconds']:>10.3f}{row['ms_per_call']:>10.2f}")


if __name__ == "__main__":
    sys.exit(main())
