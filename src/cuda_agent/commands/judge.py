"""`cuda-agent judge DIR... [--task FILE] [--json]`: judge submissions and print verdicts.

Exit code 0 whenever verdicts were reached (even reward -1); 2 for bad arguments or a bad task file;
3 when the judge cannot run here (no GPU). `--build-only` compiles without a GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from cuda_agent.commands.render import verdict_table


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="build, verify, time and reward kernel submissions",
        description="Judge submission folders (model_new.py + kernels/) against their reference model.py.",
    )
    parser.add_argument("submissions", nargs="+", type=Path, metavar="DIR", help="submission folder(s)")
    parser.add_argument("--task", type=Path, help="reference model.py (default: DIR/model.py)")
    parser.add_argument("--json", action="store_true", help="print one JSON verdict per line on stdout")
    parser.add_argument("--atol", type=float, default=1e-2, help="absolute tolerance (default 1e-2)")
    parser.add_argument("--rtol", type=float, default=1e-2, help="relative tolerance (default 1e-2)")
    parser.add_argument("--no-timing", action="store_true", help="verify only; reward 1 when correct")
    parser.add_argument("--build-only", action="store_true", help="only compile kernels/ (no GPU needed)")
    parser.add_argument("--forward-timeout", type=float, default=60.0, help="seconds per forward call (60)")
    parser.add_argument("--build-timeout", type=float, default=180.0, help="seconds per compiled file (180)")
    parser.add_argument("--arch", help="CUDA architecture to build for, e.g. 9.0 (default: the visible GPU)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cuda_agent.judge.build import BuildConfig
    from cuda_agent.judge.config import JudgeConfig, JudgeUnavailable
    from cuda_agent.judge.toolchain import default_arch
    from cuda_agent.task import TaskError, load_task

    for path in args.submissions:
        if not path.is_dir():
            print(
                f"error: {path} is not a folder (expected model_new.py and kernels/ inside)", file=sys.stderr
            )
            return 2
    try:
        task = load_task(args.task) if args.task else None
    except TaskError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    build = BuildConfig(arch=args.arch or default_arch(), compile_timeout_s=args.build_timeout)
    if args.build_only:
        return _build_only(args.submissions, build, args.json)
    from cuda_agent.judge.api import judge

    config = JudgeConfig(
        atol=args.atol, rtol=args.rtol, build=build, time_candidate=not args.no_timing,
        forward_timeout_s=args.forward_timeout,
    )  # fmt: skip
    verdicts = []
    for index, submission in enumerate(args.submissions, 1):
        if len(args.submissions) > 1:
            print(f"[{index}/{len(args.submissions)}] judging {submission}", file=sys.stderr, flush=True)
        try:
            verdict = judge(submission, task=task, config=config)
        except JudgeUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            print("hint: use --build-only to compile without a GPU", file=sys.stderr)
            return 3
        verdicts.append((submission, verdict))
        if args.json:
            print(verdict.to_json(), flush=True)
    if not args.json:
        print(verdict_table(verdicts))
    return 0


def _build_only(submissions: list[Path], config: object, as_json: bool) -> int:
    from cuda_agent.judge.build import build_extension

    for submission in submissions:
        with tempfile.TemporaryDirectory(prefix="cuda-agent-build-") as out:
            result = build_extension(submission / "kernels", Path(out), config)  # type: ignore[arg-type]
        record = {
            "submission": str(submission), "ok": result.ok, "seconds": round(result.seconds, 2),
            "compiled": list(result.compiled), "cached": list(result.cached), "compile_log": result.log,
        }  # fmt: skip
        if as_json:
            print(json.dumps(record, sort_keys=True))
        else:
            state = "built" if result.ok else "FAILED"
            print(f"{submission}: {state} in {result.seconds:.1f} s "
                  f"({len(result.compiled)} compiled, {len(result.cached)} from cache)")  # fmt: skip
            if result.log:
                print(result.log)
    return 0
