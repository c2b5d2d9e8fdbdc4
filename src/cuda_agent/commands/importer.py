"""`cuda-agent import kernelbench FILE_OR_DIR --out DIR [--tasks KERNELBENCH_DIR]`: published kernels
into our submission layout (eval/importer.py says how), then `eval --submissions DIR` judges them.

Prints a table (one row per file: converted, or refused with the reason; notes below it) and writes
DIR/import.json with the same. Exit codes: 0 every file converted, 1 some were refused, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(name, help="import kernels from other formats into our submission layout",
                                   description="Import kernels published in other formats as submission folders.")  # fmt: skip
    formats = parser.add_subparsers(dest="format", metavar="FORMAT", required=True)
    kb = formats.add_parser("kernelbench", help="KernelBench ModelNew files that build with load_inline",
                            description="Convert KernelBench-format ModelNew files (load_inline) into submission "
                            "folders: kernels/*.cu, kernels/*_binding.cpp, model_new.py, model.py.")  # fmt: skip
    kb.add_argument("source", type=Path, metavar="FILE_OR_DIR", help="a .py file or a folder of them")
    kb.add_argument("--out", type=Path, required=True, help="where the submission folders go")
    kb.add_argument("--tasks", type=Path, metavar="KERNELBENCH_DIR",
                    help="KernelBench checkout: each file's reference model.py, by level and problem")  # fmt: skip
    kb.add_argument("--json", action="store_true", help="print the conversions as JSON on stdout")
    kb.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cuda_agent.eval.importer import conversions_table, import_kernelbench
    from cuda_agent.eval.kernelbench import benchmark_root
    from cuda_agent.task import TaskError

    try:
        if not args.source.exists():
            raise ValueError(f"{args.source} does not exist")
        if args.tasks is not None:
            benchmark_root(args.tasks)
        results = import_kernelbench(args.source, args.out, args.tasks)
    except (ValueError, TaskError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not results:
        print(f"error: no .py files under {args.source}", file=sys.stderr)
        return 2
    report = {"source": str(args.source), "tasks": str(args.tasks) if args.tasks else None,
              "conversions": [r.to_dict() for r in results]}  # fmt: skip
    (args.out / "import.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(conversions_table(results), file=sys.stderr if args.json else sys.stdout, flush=True)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    print(f"written: {args.out / 'import.json'}", file=sys.stderr)
    return 0 if all(r.status == "converted" for r in results) else 1
