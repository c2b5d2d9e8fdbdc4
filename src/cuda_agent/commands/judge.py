"""`cuda-agent judge DIR... [--task FILE] [--json]`: judge submissions and print verdicts.

Several folders are judged as a batch by one `JudgeService`: builds run in parallel on the CPU while
each GPU (`--gpus`) verifies and times one submission at a time. Progress goes to stderr; `--json` prints
one verdict per line on stdout, in the order the folders were given, and `--out FILE` also writes them.
Exit code 0 whenever verdicts were reached (even reward -1); 2 for bad arguments or a bad task file;
3 when the judge cannot run here (no GPU).

`--build-only` runs everything a CPU can check (task validation, static checks, build; see
`judge/cpu_checks.py`) on every folder, in parallel, with the same progress, `--json` and `--out` as a
full judgment and the same verdict schema (status `built`, reward 0, when all passed; the GPU stages
marked `skipped`). Its exit code says whether every folder passed: 0 if so, 1 if any failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import IO, Any

from cuda_agent.commands.render import verdict_table
from cuda_agent.judge import Verdict


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="build, verify, time and reward kernel submissions",
        description="Judge submission folders (model_new.py + kernels/) against their reference model.py.",
    )
    parser.add_argument("submissions", nargs="+", type=Path, metavar="DIR", help="submission folder(s)")
    parser.add_argument("--task", type=Path, help="reference model.py (default: DIR/model.py)")
    parser.add_argument("--json", action="store_true", help="print one JSON verdict per line on stdout")
    parser.add_argument("--atol", type=float, default=1e-2, help="absolute tolerance")
    parser.add_argument("--rtol", type=float, default=1e-2, help="relative tolerance")
    parser.add_argument("--no-timing", action="store_true", help="verify only; reward 1 when correct")
    parser.add_argument("--tolerance-only", action="store_true",
                        help="the paper's rule: atol/rtol alone, without the precision audit against float64")  # fmt: skip
    parser.add_argument("--build-only", action="store_true",
                        help="CPU checks only: task, static checks, build (no GPU needed); exit 1 if any fail")
    parser.add_argument("--fixed-budget-timing", action="store_true",
                        help="time every judgment for the full budget (default: stop once the reward is decided "
                             "by a confidence sequence valid at every round; docs/design/timing.md)")  # fmt: skip
    parser.add_argument("--warm-beside-timing", action="store_true",
                        help="an experiment (issue 34): spare candidate workers warm their GPU part while a candidate "
                             "is timed instead of waiting for it (JudgeConfig.warm_beside_timing)")  # fmt: skip
    add_lane_arguments(parser)
    add_compile_mode_argument(parser)
    parser.add_argument("--compile-builds", type=positive_int, default=None, metavar="N",
                        help="fresh torch.compile builds the compile baseline is the fastest of (default 3; fewer "
                             "makes a cold task's baseline quicker and possibly slower; cached apart)")  # fmt: skip
    parser.add_argument("--forward-timeout", type=float, default=60.0, help="seconds per forward call")
    parser.add_argument("--build-timeout", type=float, default=180.0, help="seconds per compiled file")
    parser.add_argument("--build-total-timeout", type=float, default=None, metavar="SECONDS",
                        help="seconds for a whole build, all files and the link (default: the larger of 300 and "
                             "twice --build-timeout)")  # fmt: skip
    parser.add_argument("--arch", help="CUDA architecture to build for, e.g. 9.0 (default: the visible GPU)")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs to judge on in parallel")
    parser.add_argument("--build-workers", type=int, help="concurrent builds (default: the free CPU cores)")
    parser.add_argument("--out", type=Path, help="also write the verdicts as JSON lines to this file")
    parser.set_defaults(handler=run)


def build_total_timeout(per_file_s: float, total_s: float | None) -> float:
    """The whole build's limit. Raising the limit per file alone used to leave the build's total at 300 s, so
    a build of several slow files was stopped at 300 s under a message that named the larger per-file
    limit (CI, 2026-12-06). By default the total leaves room for two rounds of files at the per-file limit."""
    from cuda_agent.judge import BuildConfig

    if total_s is not None:
        return total_s
    return max(BuildConfig.total_timeout_s, 2 * per_file_s)


def positive_int(value: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return number


def compile_mode(value: str) -> str:
    """An argparse type: the mode, or argparse's error with the judge's one-line reason."""
    from cuda_agent.judge import CompileModeError, check_compile_mode

    try:
        return check_compile_mode(value)
    except CompileModeError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_compile_mode_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`--compile-mode`, shared by `judge`, `eval` and `serve` (judge/trusted/compile_modes.py)."""
    parser.add_argument("--compile-mode", type=compile_mode, default="default", metavar="MODE",
                        help="the torch.compile baseline's mode: default (when not given) or max-autotune-no-cudagraphs "
                             "(modes with CUDA graphs are refused); baselines are cached per mode")  # fmt: skip


def add_lane_arguments(parser: argparse.ArgumentParser) -> None:
    """`--lane-depth` and `--lane-preempt`, issue 34's experiments, shared by `judge` and `serve` (and
    scripts/gpu_suite.py, which passes them on to `judge`); `lane_arguments_refused` says when they clash."""
    parser.add_argument("--lane-depth", type=int, choices=(1, 2), default=1,
                        help="an experiment (issue 34): judgments in flight per GPU when judging many; 2 verifies one "
                             "beside another, timing alone (JudgeConfig.lane_depth)")  # fmt: skip
    parser.add_argument("--lane-preempt", action="store_true",
                        help="an experiment (issue 34), with --lane-depth 2: a timing freezes the other judgment's "
                             "workers mid-call instead of waiting for its verification (JudgeConfig.lane_preempt)")  # fmt: skip


def lane_arguments_refused(lane_depth: int, lane_preempt: bool) -> str:
    """Why the lane options cannot go together, in one line ("" where they can): JudgeConfig's own rule,
    said in the options' names before a config is made."""
    if lane_preempt and lane_depth != 2:
        return "--lane-preempt freezes another judgment's workers: it needs --lane-depth 2"
    return ""


def run(args: argparse.Namespace) -> int:
    from cuda_agent.judge import BuildConfig, JudgeConfig, JudgeUnavailable, default_arch
    from cuda_agent.task import TaskError, load_task

    for path in args.submissions:
        if not path.is_dir():
            print(
                f"error: {path} is not a folder (expected model_new.py and kernels/ inside)", file=sys.stderr
            )
            return 2
    if refused := lane_arguments_refused(getattr(args, "lane_depth", 1), getattr(args, "lane_preempt", False)):
        print(f"error: {refused}", file=sys.stderr)
        return 2
    try:
        task = load_task(args.task) if args.task else None
    except TaskError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    build = BuildConfig(arch=args.arch or default_arch(), compile_timeout_s=args.build_timeout,
                        total_timeout_s=build_total_timeout(args.build_timeout, args.build_total_timeout))
    if args.build_only:
        # No reward rests on this build, so the judge's binding object may be reused from the cache (a full
        # judgment always compiles its own).
        cpu_build = dataclasses.replace(build, private_judge_binding=False)
        cpu_config = JudgeConfig(atol=args.atol, rtol=args.rtol, build=cpu_build)
        return _build_only(args.submissions, task, cpu_config, args)
    from cuda_agent import gpu_lease
    from cuda_agent.judge import JudgeService

    config = judge_config(args, build)
    devices = list(range(args.gpus)) if args.gpus > 1 else None
    verdicts: dict[int, Verdict] = {}
    sink = open(args.out, "w") if args.out else None  # noqa: SIM115 - closed below
    try:
        service = JudgeService(config, devices=devices, build_workers=args.build_workers,
                               keep_warm=len(args.submissions) > 1)  # fmt: skip
        # The GPUs alone while judging: no agent's tool command runs on them meanwhile (gpu_lease).
        lease = gpu_lease.judgment(gpu_lease.gpus_of(devices), what="cuda-agent judge")
        with service, lease:
            progress = Progress(len(args.submissions))
            printed = 0
            for index, verdict in service.judge_many(args.submissions, task=task):
                verdicts[index] = verdict
                progress.update(args.submissions[index], verdict)
                printed = _emit_in_order(args.submissions, verdicts, printed, args.json, sink)
            progress.done()
        if service.lane_depth_note:  # asked for two per GPU, judged one per GPU: say why, in one line
            print(f"note: --lane-depth {config.lane_depth} not taken ({service.lane_depth_note}); judged one per GPU",
                  file=sys.stderr)  # fmt: skip
    except JudgeUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("hint: use --build-only to compile without a GPU", file=sys.stderr)
        return 3
    except gpu_lease.LeaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    finally:
        if sink:
            sink.close()
    ordered = [(args.submissions[i], verdicts[i]) for i in range(len(args.submissions))]
    if not args.json:
        print(verdict_table(ordered))
        if len(ordered) > 1:
            print("\n" + summary_line(ordered))
    _hint_compile_limit(ordered, args.build_timeout)
    return 0


def judge_config(args: argparse.Namespace, build: Any) -> Any:
    """The JudgeConfig a full judgment runs with, from the command's options."""
    from cuda_agent.judge import JudgeConfig, TimingConfig
    from cuda_agent.judge.config import DEFAULT_COMPILE_BUILDS

    return JudgeConfig(
        atol=args.atol, rtol=args.rtol, build=build, time_candidate=not args.no_timing,
        forward_timeout_s=args.forward_timeout, precision_audit=not args.tolerance_only,
        timing=TimingConfig(sequential=not args.fixed_budget_timing, compile_mode=args.compile_mode,
                            compile_builds=getattr(args, "compile_builds", None) or DEFAULT_COMPILE_BUILDS),
        warm_beside_timing=getattr(args, "warm_beside_timing", False), lane_depth=getattr(args, "lane_depth", 1),
        lane_preempt=getattr(args, "lane_preempt", False),
    )  # fmt: skip


def _emit_in_order(
    submissions: list[Path], verdicts: dict[int, Any], printed: int, as_json: bool, sink: IO[str] | None
) -> int:
    """Print (with --json) and write (with --out) every verdict from index `printed` on that has come in,
    so both keep the order the folders were given in whatever order they finish; returns the next index."""
    while printed in verdicts:
        line = _json_line(submissions[printed], verdicts[printed])
        if as_json:
            print(line, flush=True)
        if sink:
            sink.write(line + "\n")
            sink.flush()
        printed += 1
    return printed


def _json_line(submission: Path, verdict: Verdict) -> str:
    record = json.loads(verdict.to_json())
    record["submission"] = str(submission)
    return json.dumps(record, sort_keys=True)


def summary_line(verdicts: list[tuple[Path, Verdict]]) -> str:
    counts = Counter(v.status.value for _, v in verdicts)
    rewards = Counter(v.reward for _, v in verdicts)
    by_status = ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))
    by_reward = ", ".join(f"{r:+d}: {n}" for r, n in sorted(rewards.items()))
    return f"{len(verdicts)} judged: {by_status}; rewards {by_reward}"


class Progress:
    """One status line on stderr per verdict: count, rate, ETA, the latest result."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0
        self.start = time.monotonic()

    def update(self, submission: Path, verdict: Verdict) -> None:
        self.count += 1
        if self.total < 2:
            return
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.count * (self.total - self.count)
        print(f"[{self.count}/{self.total}] {elapsed:5.0f} s, ETA {eta:4.0f} s  {submission.name}: "
              f"{verdict.status.value} {verdict.reward:+d}", file=sys.stderr, flush=True)  # fmt: skip

    def done(self) -> None:
        if self.total > 1:
            elapsed = time.monotonic() - self.start
            rate = 3600 * self.count / elapsed if elapsed > 0 else 0.0
            print(f"{self.count} verdicts in {elapsed:.0f} s ({rate:.0f} per hour)", file=sys.stderr, flush=True)


def _build_only(submissions: list[Path], task: object, config: object, args: argparse.Namespace) -> int:
    """CPU checks of every folder, `--build-workers` at a time; verdicts in the order given."""
    from cuda_agent.judge import Status, check_on_cpu, default_workers

    workers = max(1, min(len(submissions), args.build_workers or default_workers()))
    progress = Progress(len(submissions))
    print(f"CPU checks (task, static checks, build) of {len(submissions)} folder(s), {workers} at a time; "
          "verification and timing need a GPU", file=sys.stderr, flush=True)  # fmt: skip
    verdicts: dict[int, Verdict] = {}
    sink = open(args.out, "w") if args.out else None  # noqa: SIM115 - closed below
    try:
        with ThreadPoolExecutor(workers, thread_name_prefix="cpu-check") as pool:
            futures = {pool.submit(check_on_cpu, path, task, config): i for i, path in enumerate(submissions)}
            printed = 0
            for future in as_completed(futures):
                index = futures[future]
                verdicts[index] = future.result()[0]
                progress.update(submissions[index], verdicts[index])
                printed = _emit_in_order(submissions, verdicts, printed, args.json, sink)
        progress.done()
    finally:
        if sink:
            sink.close()
    ordered = [(submissions[i], verdicts[i]) for i in range(len(submissions))]
    if not args.json:
        print(verdict_table(ordered))
        if len(ordered) > 1:
            print("\n" + summary_line(ordered))
    _hint_compile_limit(ordered, args.build_timeout)
    return 0 if all(v.status is Status.BUILT for _, v in ordered) else 1


def _hint_compile_limit(verdicts: list[tuple[Path, Verdict]], limit: float) -> None:
    """A compilation stopped at the judge's limit per file: say which flag sets it. The verdict's reason is
    also what an agent reads, so the flag is named here, for the person at the command line; a `.cu` that
    includes <torch/extension.h> (every load_inline import) took over 180 s on a busy 2-core machine."""
    if any("did not finish within" in v.reason and "compilation of" in v.reason for _, v in verdicts):
        print(f"hint: the judge stops each file's compilation after {limit:.0f} s (--build-timeout) and a whole "
              f"build after --build-total-timeout; a small or busy machine may need more, e.g. --build-timeout "
              f"{max(600, 2 * limit):.0f}", file=sys.stderr)
