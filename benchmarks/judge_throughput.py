"""Judge latency and throughput on one GPU: the original CUDA-Agent one-shot path against our judge service.

    python benchmarks/judge_throughput.py [--batch 60] [--warm-reps 3] [--out DIR]
    python benchmarks/judge_throughput.py --rl-shaped                       # adds g: 8 tasks x 8 candidates
    python benchmarks/judge_throughput.py --groups 4 --group-size 16        # g with another shape
    python benchmarks/judge_throughput.py --original-reps 0 --batch 0 --rl-shaped   # b-e and g: no a, no f
    # every issue-34 target in one run that fits a 10-minute device call (estimated ~8 min at 1,328/h):
    python benchmarks/judge_throughput.py --original-reps 0 --warm-reps 2 --aa-reps 3 --batch 32 --rl-shaped

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
     the batch over its idle time give the A/A ratio;
  g. RL-shaped (`--rl-shaped`, or `--groups T --group-size G`; off by default): T tasks of RL_TASKS, G
     candidates each (a variant with a unique comment on its first `.cu`, as in c), all T x G submitted
     at once through `service.judge_many`, group after group, as one RL step's rollouts arrive.
     Tasks not primed in b are judged once first, so g runs on cached baselines as f does. Reports
     verdicts/hour and per-group latency (from the step's start to its group's first and last verdict:
     the last is when the trainer can score the group).

During f and g a thread reads the GPU's utilization samples from NVML every 40 ms (benchmarks/gpu_idle.py):
the phase's GPU idle share is 1 - their mean utilization (the share of time no kernel ran), printed with
the share of samples at 0 % beside it (null, with the reason, where NVML is absent). The target is on the
time share: a sample spans 1/6 s or more, so a 0 % sample needs a whole period idle and the samples'
share misses the short gaps between timed windows that the issue means.

The judge's caches (objects, baselines) start empty in a fresh folder unless `--cache-dir` names one.
Prints a table (p50/p90/mean latency, verdicts/hour), the ratios to the original, the cold-build times,
the A/A ratio and the idle shares; writes judge_throughput.json and verdicts.jsonl (every verdict of ours)
to `--out`; ends with one PASS/FAIL line per target. The targets are issue 34's "Done when" bar on an
H200: warm median <= 2.5 s, cold build median <= 8 s, >= 3000 verdicts/hour (batch and RL-shaped),
|A/A - 1| <= 0.02, GPU idle share < 15% (batch and RL-shaped). Each line also names the bar before issue
34 where one existed (warm median <= 5 s, >= 1000 verdicts/hour), so a run between the two reads as
progress, but only the new bar passes. Exit code 0 only if all that ran pass; 2 when no GPU or no judge
service.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(REPO / "src"))
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from gpu_idle import IdleSampler, open_reader  # noqa: E402  (benchmarks/, on the path above)
from throughput_report import (  # noqa: E402  (benchmarks/, on the path above)
    describe,
    draw_policy,
    finish,
    fmt,
    share_text,
)

from cuda_agent.commands.judge import lane_arguments_refused  # noqa: E402  (src/, on the path above)

HONEST_EXAMPLES = ("elementwise_chain", "row_softmax", "layernorm", "gemm_bias_relu")

# Honest cases of tests/adversarial that g adds to the 4 examples, each with the reason it was chosen.
# All four: expected accept, plain CUDA kernels that build on a CPU in about a minute (no cuBLAS, cuDNN,
# CUB or Thrust, whose headers and links make builds slower and would time the library, not the judge),
# fp32 inputs of at most 33M elements, and a model.py unlike each other's and the examples'.
RL_ADVERSARIAL_TASKS: tuple[tuple[str, str], ...] = (
    ("00_honest_tuple_outputs", "relu and sigmoid of (4096, 4096): the smallest input, and two outputs"),
    ("00_honest_two_kernel_colcenter", "column mean then relu * weight: two chained kernels, a parameter"),
    ("00_honest_max_with_indices", "row max of (16384, 2048) with its int64 index: a row reduction"),
    ("00_honest_absmax_norm", "x / max(|x|) on (8192, 4096): a global reduction, then a scale"),
)
# g's tasks in order: --groups T takes the first T.
RL_TASKS: tuple[Path, ...] = (*(REPO / "examples" / n for n in HONEST_EXAMPLES),
                              *(REPO / "tests" / "adversarial" / n for n, _ in RL_ADVERSARIAL_TASKS))  # fmt: skip
RL_DEFAULT_SHAPE = (8, 8)  # 8 tasks x 8 candidates: issue 34's RL-shaped batch


# ---- small helpers --------------------------------------------------------------------------------


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
        "draw": draw_policy(timing.policy if timing else {}),
        "compiled": list(build.get("compiled", [])) if isinstance(build, dict) else None,
        "cached": list(build.get("cached", [])) if isinstance(build, dict) else None,
        # A reference preparation shared with earlier judgments of the task (decide/reference_group.py).
        "shared_preparation": str(checks.get("reference_preparation", "")).startswith("shared"),
        # Depth 2 (--lane-depth 2): judged again alone after a failure beside another; others frozen while timed.
        "judged_again_alone": bool(checks.get("judged_again_alone")),
        "others_frozen": int(checks.get("lane_others_frozen", 0) or 0),
        # --lane-preempt: its drain failed beside a frozen section, so it waited for that section to end.
        "waited_after_freeze": bool(checks.get("lane_waited_after_freeze")),
    }


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
               "unit_seconds": dict(result.unit_seconds) if result else {},
               "log": (result.log[-2000:] if result and not result.ok else "")}  # fmt: skip
        records.append(rec)
        status = "ok" if rec["ok"] else f"FAILED {error or rec['log'][-300:]}"
        print(f"  [cold build {i + 1}/{len(examples)}] {name}: {wall:.2f} s, {status}; compiled "
              f"{rec['unit_seconds'] or rec['compiled']}, cached {rec['cached']}", flush=True)  # fmt: skip
    return records


def phase_batch(service: Any, journal: Journal, jobs: list[tuple[str, Path]],
                expected: dict[str, dict[str, Any] | None],
                phase: str = "batch") -> tuple[list[dict[str, Any]], float, str]:  # fmt: skip
    """Everything through one judge_many call; returns per-job records (in submission order), the wall
    time and an error text. `phase` names the jobs in verdicts.jsonl and the progress lines."""
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
            journal.write(phase, name, index, at, verdict)
            b = brief(verdict)
            records[index].update({"done_at_s": round(at, 4), "verdict": b})
            want = expected.get(name)
            if b["status"] != "ok" or (want is not None and b["reward"] != want["reward"]):
                print(f"    WARNING: {phase} #{index} {name}: {describe(b)}", flush=True)
            if time.monotonic() - last_print > 15 or done == len(jobs):
                last_print = time.monotonic()
                print(f"  [{phase} {done}/{len(jobs)}] {at:.1f} s, {done / at * 3600:.0f} verdicts/h so far",
                      flush=True)  # fmt: skip
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        print(f"  {phase} stopped by {error}", flush=True)
    wall = time.monotonic() - start
    return records, wall, error


def rl_variants(tasks: list[Path], group_size: int, root: Path) -> list[tuple[str, Path]]:
    """One RL step's candidates: for each task in order, `group_size` variants (its first `.cu` with a
    unique comment, so each rebuilds), group after group as a trainer submits a step's rollouts.
    Returns (task name, variant folder) pairs; the task name is the group."""
    return [(task.name, make_variant(task, root, f"rl-{g}-{k}"))
            for g, task in enumerate(tasks) for k in range(group_size)]  # fmt: skip


def gpu_idle_reader(torch: Any) -> tuple[Any, str]:
    """NVML's reader for the GPU torch uses (by UUID, so CUDA_VISIBLE_DEVICES cannot point it at another),
    falling back to NVML's device 0; (None, why) where NVML is absent."""
    try:
        uuid = f"GPU-{torch.cuda.get_device_properties(torch.cuda.current_device()).uuid}"
    except Exception:
        uuid = None
    reader, note = open_reader(uuid=uuid)
    if reader is None and uuid is not None:
        reader, fallback = open_reader(index=0)
        note = f"{note}; by index 0: {fallback or 'ok'}"
    return reader, note


def sampled(reader: Any, note: str, run: Any) -> tuple[Any, dict[str, Any]]:
    """run() with the GPU idle sampler polling around it: (its result, the idle figures)."""
    sampler = IdleSampler(reader, note).start()
    try:
        result = run()
    finally:
        figures = sampler.stop()
    return result, figures


# ---- main -----------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: example folders, the A/A example and g's shape (args.rl_shape is
    (T, G), or (0, 0) when g is off). A bad value exits with argparse's usage error (status 2)."""
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
    parser.add_argument(
        "--fixed-budget-timing",
        action="store_true",
        help="time every judgment for the full budget (TimingConfig.sequential off; issue 34)",
    )
    parser.add_argument(
        "--warm-beside-timing", choices=("on", "off"), default="off",
        help="candidate workers' GPU warm-up may run while a candidate is timed (JudgeConfig.warm_beside_timing, "
        "an experiment; issue 34)",
    )  # fmt: skip
    parser.add_argument(
        "--spares-cpus", choices=("build", "lane"), default="lane",
        help="where spare workers warm: the compilers' CPUs, moved to the lane's when taken "
        "(JudgeConfig.spares_on_build_cpus, an experiment; issue 34), or the lane's (the default)",
    )  # fmt: skip
    parser.add_argument(
        "--lane-depth", type=int, choices=(1, 2), default=1,
        help="judgments in flight per GPU in the batches (JudgeConfig.lane_depth, an experiment; issue 34): 2 "
        "verifies a second one beside the first, timing alone",
    )  # fmt: skip
    parser.add_argument(
        "--lane-preempt", choices=("on", "off"), default="off",
        help="with --lane-depth 2: a timing freezes the other judgment's workers mid-call instead of waiting for "
        "its verification (JudgeConfig.lane_preempt, an experiment; issue 34)",
    )  # fmt: skip
    parser.add_argument(
        "--pad-release", choices=("on", "off"), default=None,
        help="timing pads wait for the host's release (protocol v7) or not (v6); default: the judge's",
    )  # fmt: skip
    parser.add_argument("--build-workers", type=int, default=None,
                        help="the service's parallel builds (default: the service's, cpu_count - 2)")  # fmt: skip
    parser.add_argument("--cache-dir", type=Path,
                        help="the judge's cache root (CUDA_AGENT_CACHE); default a fresh folder under --out")  # fmt: skip
    parser.add_argument("--out", type=Path, help="output folder (default: a fresh temp folder)")
    parser.add_argument("--keep-variants", action="store_true", help="keep the variant submissions")
    parser.add_argument("--no-cold-build", action="store_true",
                        help="skip phase d (cold builds); with --aa-reps 0 and --batch 0 the run is a+b+c only")  # fmt: skip
    parser.add_argument("--rl-shaped", action="store_true",
                        help="run g, the RL-shaped batch: 8 tasks x 8 candidates unless --groups/--group-size say")  # fmt: skip
    parser.add_argument("--groups", type=int, metavar="T",
                        help=f"g: tasks per RL step, the first T of RL_TASKS (1-{len(RL_TASKS)}; default 8)")  # fmt: skip
    parser.add_argument("--group-size", type=int, metavar="G", help="g: candidates per task (default 8)")
    args = parser.parse_args(argv)
    if refused := lane_arguments_refused(args.lane_depth, args.lane_preempt == "on"):
        parser.error(refused)

    for name in ("warm_reps", "aa_reps", "batch", "original_reps"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must be >= 0, not {getattr(args, name)}")
    examples: dict[str, Path] = {}
    for item in args.examples:
        path = Path(item) if Path(item).is_dir() else args.examples_dir / item
        if not (path / "model.py").is_file() or not (path / "kernels").is_dir():
            parser.error(f"{item}: not a submission folder (model.py, model_new.py, kernels/)")
        examples[path.name] = path.resolve()
    if args.aa_example not in examples:
        parser.error(f"--aa-example {args.aa_example} is not among --examples ({', '.join(examples)})")
    try:
        args.rl_shape = rl_shape(args.rl_shaped, args.groups, args.group_size)
    except ValueError as exc:
        parser.error(str(exc))
    args.example_paths = examples
    return args


def rl_shape(rl_shaped: bool, groups: int | None, group_size: int | None) -> tuple[int, int]:
    """(tasks, candidates per task) of phase g: (0, 0) when none of the three options is given; either
    count given alone turns g on with the other at its default (RL_DEFAULT_SHAPE)."""
    if not rl_shaped and groups is None and group_size is None:
        return 0, 0
    tasks = RL_DEFAULT_SHAPE[0] if groups is None else groups
    size = RL_DEFAULT_SHAPE[1] if group_size is None else group_size
    if not 1 <= tasks <= len(RL_TASKS):
        raise ValueError(f"--groups must be 1-{len(RL_TASKS)} (the tasks of RL_TASKS), not {tasks}")
    if size < 1:
        raise ValueError(f"--group-size must be >= 1, not {size}")
    return tasks, size


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    examples: dict[str, Path] = args.example_paths

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
                              "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
                                       if k != "example_paths"},
                              "examples": {k: str(v) for k, v in examples.items()}}  # fmt: skip
    try:
        # a. the original one-shot path, before our service holds anything
        original: list[dict[str, Any]] = []
        if args.original_reps > 0:
            print(
                f"\n== a. original one-shot path ({args.original_reps} x {len(args.original_examples or examples)}) ==",
                flush=True,
            )
            chosen = {
                k: v for k, v in examples.items() if not args.original_examples or k in args.original_examples
            }
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
            pads = {} if args.pad_release is None else {"pad_release": args.pad_release == "on"}
            config = JudgeConfig(timing=TimingConfig(sequential=not args.fixed_budget_timing, **pads),
                                 warm_beside_timing=args.warm_beside_timing == "on",
                                 spares_on_build_cpus=args.spares_cpus == "build", lane_depth=args.lane_depth,
                                 lane_preempt=args.lane_preempt == "on")
            service_cm = JudgeService(config=config, build_workers=args.build_workers)
            service = service_cm.__enter__()
        except JudgeUnavailable as exc:
            print(f"FAIL: the judge cannot run here: {exc}", file=sys.stderr)
            return 2
        report["service_start_s"] = round(time.monotonic() - t0, 3)
        print(f"  service up in {report['service_start_s']:.1f} s", flush=True)
        idle_reader, idle_note = None, ""
        if args.batch > 0 or args.rl_shape != (0, 0):
            idle_reader, idle_note = gpu_idle_reader(torch)
            source = idle_reader.source if idle_reader else "none"
            print(f"  GPU idle sampler: {source}" + (f" ({idle_note})" if idle_note else ""), flush=True)
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
                print(
                    f"\n== e. A/A idle: {args.aa_reps} variants of {args.aa_example}, one at a time ==",
                    flush=True,
                )
                jobs = [(args.aa_example, make_variant(examples[args.aa_example], variants, f"aa-{k}"))
                        for k in range(args.aa_reps)]  # fmt: skip
                aa_idle = phase_sequential(service, journal, "aa_idle", "A/A idle", jobs, expected)
            report["aa_idle"] = aa_idle

            # f. throughput: builds in parallel, GPU work serialised
            names = list(examples)
            jobs = [(names[i % len(names)], make_variant(examples[names[i % len(names)]], variants, f"batch-{i}"))
                    for i in range(args.batch)]  # fmt: skip
            batch, batch_wall, batch_error, batch_idle = [], 0.0, "", None
            if args.batch > 0:
                print(f"\n== f. throughput: {args.batch} variants through judge_many ==", flush=True)
                (batch, batch_wall, batch_error), batch_idle = sampled(
                    idle_reader, idle_note, lambda: phase_batch(service, journal, jobs, expected)
                )
                print(f"  GPU idle share {share_text(batch_idle)}", flush=True)
            report["batch"] = {"records": batch, "wall_s": round(batch_wall, 3), "error": batch_error,
                               "sequential_timing": not args.fixed_budget_timing, "gpu_idle": batch_idle}  # fmt: skip

            # g. RL-shaped: T tasks x G candidates, one step's rollouts at once
            report["rl"] = None
            if args.rl_shape != (0, 0):
                report["rl"] = phase_rl(
                    service, journal, args.rl_shape, variants, expected, idle_reader, idle_note
                )
            report.update(service.worker_lifecycle())
            report["lane_depth_note"] = service.lane_depth_note  # why --lane-depth 2 was not taken ("" if it was)
            if service.lane_depth_note:
                print(f"note: --lane-depth {args.lane_depth} not taken: {service.lane_depth_note}", flush=True)
        finally:
            service_cm.__exit__(None, None, None)
    finally:
        journal.close()
        if not args.keep_variants:
            shutil.rmtree(variants, ignore_errors=True)
        else:
            report["variants_dir"] = str(variants)

    return finish(report, out, time.monotonic() - bench_start)


def phase_rl(service: Any, journal: Journal, shape: tuple[int, int], variants: Path,
             expected: dict[str, dict[str, Any] | None], idle_reader: Any, idle_note: str) -> dict[str, Any]:  # fmt: skip
    """Phase g: prime the RL tasks b did not judge (one at a time, so g runs on cached baselines as f does),
    then all T x G candidates through one judge_many call with the idle sampler running."""
    tasks = list(RL_TASKS[: shape[0]])
    unprimed = [t for t in tasks if t.name not in expected]
    prime: list[dict[str, Any]] = []
    if unprimed:
        print(f"\n== g. RL tasks not primed in b: each once ({len(unprimed)}) ==", flush=True)
        jobs = [(t.name, make_variant_copy(t, variants, "rl-prime")) for t in unprimed]
        prime = phase_sequential(service, journal, "rl_prime", "RL cold", jobs, None)
        expected.update({r["example"]: r["verdict"] for r in prime})
    jobs = rl_variants(tasks, shape[1], variants)
    print(f"\n== g. RL-shaped: {shape[0]} tasks x {shape[1]} candidates through judge_many ==", flush=True)
    (records, wall, error), idle = sampled(idle_reader, idle_note,
                                           lambda: phase_batch(service, journal, jobs, expected, phase="rl"))  # fmt: skip
    print(f"  GPU idle share {share_text(idle)}", flush=True)
    return {"groups": shape[0], "group_size": shape[1], "tasks": [str(t) for t in tasks], "prime": prime,
            "records": records, "wall_s": round(wall, 3), "error": error, "gpu_idle": idle}  # fmt: skip


def make_variant_copy(submission: Path, root: Path, tag: str) -> Path:
    """An unchanged copy of `submission` under root/tag/<name>."""
    dest = root / tag / submission.name
    shutil.copytree(submission, dest, ignore=shutil.ignore_patterns("__pycache__", "*.so", "build"))
    return dest


if __name__ == "__main__":
    from cuda_agent.judge.common.procs import exit_on_sigterm

    exit_on_sigterm()  # `timeout` (scripts/device/lane_waits.sh): the service closes, its workers die
    sys.exit(main())
