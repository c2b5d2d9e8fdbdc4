"""`cuda-agent synth --out DIR [--tasks N] [--workers W] ...`: build a training-task dataset.

Runs the synthesis pipeline into DIR (journal.jsonl, tasks.parquet, summary.json); running it again on the
same DIR resumes. `--cpu-only` runs every stage but GPU timing on the CPU; `--static-only` stops after the
static stages; `--export` only rewrites the parquet from the journal. Exit code 0 when the run ended
normally (whatever was accepted), 2 for bad arguments (checked before the slow crawl: an --out folder
that cannot be written, a --benchmark that is missing or empty, neither --benchmark nor --no-decontam),
130 after Ctrl-C (what was accepted is saved; the same command resumes).

Decontamination is never skipped silently: nothing of KernelBench ships with the package (the 7 tasks of
examples/kernelbench_mini are a demo, not the benchmark), so a run names the benchmark it is cleaned
against (`--benchmark`) or says that it is not (`--no-decontam`), and both the progress and the summary
repeat which. `--quiet` drops the progress bar and library warnings, in the workers
too.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path


def parse_mix(text: str) -> dict[str, float]:
    """`torch#1=0.034,torch#2=0.838,...` or `1:0.034,2:0.838,transformers:0.012`."""
    mix: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, _, value = part.replace(":", "=").partition("=")
        key = key.strip()
        if key.isdigit():
            key = f"torch#{key}"
        mix[key] = float(value)
    if not mix or any(v < 0 for v in mix.values()):
        raise ValueError(f"bad mix: {text!r}")
    return mix


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="synthesise KernelBench-format training tasks (CUDA-Agent-Ops-6K style)",
        description="Compose operators from torch and transformers into tasks, filter, decontaminate, save.",
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder (resumes if it has a journal)")
    parser.add_argument("--tasks", type=int, default=6000, help="accepted tasks to make")
    parser.add_argument(
        "--mix", help="bucket mix, e.g. '1:0.034,2:0.838,3:0.076,4:0.028,5:0.012,transformers:0.012'"
    )
    parser.add_argument("--workers", type=int, default=4, help="execution worker processes")
    parser.add_argument("--device", default="cuda", help="device for the execution filter")
    parser.add_argument(
        "--cpu-only", action="store_true", help="run on the CPU; skip GPU timing (tasks marked)"
    )
    parser.add_argument("--static-only", action="store_true", help="stop after the static stages")
    parser.add_argument("--band-ms", type=float, nargs=2, default=(1.0, 100.0), metavar=("LO", "HI"),
                        help="eager GPU time of one forward a task must take, in ms (sizes are scaled into it)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile check")
    parser.add_argument("--timeout", type=float, default=300.0, help="per-task timeout in seconds")
    parser.add_argument("--minutes", type=float, help="stop composing after this many minutes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--benchmark", type=Path, help="benchmark folder to decontaminate against (KernelBench layout); "
        "this or --no-decontam is required"
    )
    parser.add_argument(
        "--no-decontam", action="store_true",
        help="do not decontaminate: the dataset may then hold benchmark tasks (say so where you use it)",
    )
    parser.add_argument(
        "--ops-threshold", type=float, default=0.8, help="decontamination: op-sequence similarity"
    )
    parser.add_argument("--ast-threshold", type=float, default=0.7, help="decontamination: AST similarity")
    parser.add_argument("--memory-fraction", type=float, help="per-worker CUDA memory fraction")
    parser.add_argument("--max-task-gb", type=float, default=6.0, help="composer's memory cap per task (GPU)")
    parser.add_argument(
        "--transformers-families", type=int, default=40, help="transformers families to crawl"
    )
    parser.add_argument("--llm-model", help="compose with this model through an OpenAI-compatible API")
    parser.add_argument("--llm-base-url", help="OpenAI-compatible base URL (e.g. http://localhost:8000/v1)")
    parser.add_argument("--llm-fraction", type=float, default=1.0, help="share of tasks the LLM composes")
    parser.add_argument(
        "--cache-dir", type=Path, help="catalog cache folder (default: $CUDA_AGENT_CACHE/synth, else ~/.cache/cuda-agent/synth)"
    )
    parser.add_argument("--export", action="store_true", help="only rewrite tasks.parquet from the journal")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar, no library warnings")
    parser.set_defaults(handler=run)


def build_config(args: argparse.Namespace) -> object:
    from cuda_agent.synth import DEFAULT_MIX
    from cuda_agent.synth.catalog import CrawlOptions
    from cuda_agent.synth.compose import ComposeConfig
    from cuda_agent.synth.decontam import DecontamConfig
    from cuda_agent.synth.llm import LLMConfig
    from cuda_agent.synth.pipeline import PipelineConfig

    mix = parse_mix(args.mix) if args.mix else dict(DEFAULT_MIX)
    band = (float(args.band_ms[0]), float(args.band_ms[1]))
    compose = None
    if not (args.cpu_only or args.static_only):
        compose = ComposeConfig(band_ms=band, max_bytes=int(args.max_task_gb * (1 << 30)))
    return PipelineConfig(
        out_dir=args.out,
        num_tasks=args.tasks,
        mix=mix,
        seed=args.seed,
        workers=args.workers,
        device=args.device,
        cpu_only=args.cpu_only,
        execute=not args.static_only,
        band_ms=band,
        compile=not args.no_compile,
        task_timeout_s=args.timeout,
        max_minutes=args.minutes,
        memory_fraction=args.memory_fraction,
        benchmark_dir=args.benchmark,
        decontam=DecontamConfig(args.ops_threshold, args.ast_threshold),
        crawl=CrawlOptions(max_transformers_families=args.transformers_families),
        compose=compose,
        llm=LLMConfig(args.llm_model, args.llm_base_url, fraction=args.llm_fraction)
        if args.llm_model
        else None,
        progress=not args.quiet,
        cache_dir=args.cache_dir,
    )


NO_BENCHMARK = (
    "synth decontaminates against a benchmark and none is bundled: pass --benchmark KernelBench/KernelBench "
    "(git clone https://github.com/ScalingIntelligence/KernelBench), or --no-decontam to skip it knowingly"
)


def decontamination_choice(args: argparse.Namespace) -> str:
    """The line that says what this run is decontaminated against; ValueError when the user said neither
    (or both)."""
    if args.benchmark is not None and args.no_decontam:
        raise ValueError("--benchmark and --no-decontam contradict each other; give one")
    if args.benchmark is not None:
        return f"decontamination: against {args.benchmark}"
    if args.no_decontam:
        return "decontamination: OFF (--no-decontam): the dataset may hold benchmark tasks"
    raise ValueError(NO_BENCHMARK)


def check_writable(out: Path) -> None:
    """Fail in a second, not after the crawl: create `out` and write a probe file in it."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-probe-"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot write to --out {out}: {exc.strerror or exc}; pick a writable folder") from exc


@contextlib.contextmanager
def silence_libraries() -> Iterator[None]:
    """--quiet: no Python warnings and no library log records below errors, here and in spawned workers.

    Undone on exit, so that `main()` called in-process (tests, notebooks) leaves no global state behind.
    """
    from cuda_agent.synth.workers import QUIET_ENV

    names = ("PYTHONWARNINGS", QUIET_ENV, "TRANSFORMERS_VERBOSITY", "TORCH_CPP_LOG_LEVEL")
    saved_env = {name: os.environ.get(name) for name in names}
    saved_disable = logging.root.manager.disable
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore")
        logging.disable(logging.WARNING)
        os.environ["PYTHONWARNINGS"] = "ignore"  # read at start-up by the spawned worker interpreters
        os.environ[QUIET_ENV] = "1"  # and this by the workers' own set-up
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
        try:
            yield
        finally:
            logging.disable(saved_disable)
            for name, value in saved_env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def run(args: argparse.Namespace) -> int:
    with silence_libraries() if args.quiet else contextlib.nullcontext():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    decontamination = ""
    try:
        if args.tasks < 1:
            raise ValueError("--tasks must be at least 1")
        config = build_config(args)
        if not args.export:
            decontamination = decontamination_choice(args)
            check_writable(args.out)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.export:
        from cuda_agent.synth.dataset import accepted_records, read_journal, write_parquet
        from cuda_agent.synth.pipeline import JOURNAL, PARQUET

        records = accepted_records(read_journal(args.out / JOURNAL))
        path = write_parquet(records, args.out / PARQUET)
        print(f"wrote {len(records)} tasks to {path}")
        return 0
    from cuda_agent.synth.pipeline import Pipeline

    if not (args.cpu_only or args.static_only) and args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            print("error: no CUDA GPU visible; use --cpu-only or --static-only", file=sys.stderr)
            return 2
    from cuda_agent.synth.decontam import BenchmarkError

    print(decontamination, file=sys.stderr, flush=True)
    try:
        pipeline = Pipeline(config)  # type: ignore[arg-type]
    except BenchmarkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        summary = pipeline.run()
    except KeyboardInterrupt:
        done = pipeline.summary.total_accepted
        print(f"\ninterrupted: {done} accepted task(s) are saved in {args.out} (journal.jsonl, tasks.parquet); "
              "run the same command again to resume", file=sys.stderr)  # fmt: skip
        return 130
    print(summary.format())
    print(f"dataset: {args.out / 'tasks.parquet'}")
    return 0
