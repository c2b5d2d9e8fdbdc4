"""`cuda-agent workspace TASK DIR`: lay out an agent workspace in the CUDA-Agent layout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="create a workspace folder for a task",
        description="Create a CUDA-Agent workspace for a task.",
    )
    parser.add_argument("task", type=Path, help="reference model.py (KernelBench format)")
    parser.add_argument("dest", type=Path, help="folder to create")
    parser.add_argument("--force", action="store_true", help="replace DEST if it is not empty")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cuda_agent.task import TaskError, load_task
    from cuda_agent.workspace import materialize

    try:
        task = load_task(args.task)
        dest = materialize(task, args.dest, overwrite=args.force)
    except (TaskError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"workspace for {task.name} ready in {dest}")
    print(f"next: edit {dest}/kernels/ and {dest}/model_new.py, then `cd {dest} && bash utils/compile.sh`")
    return 0
