"""What the sign audit (src/cuda_agent/judge/trusted/sign_audit.py) costs a judgment's reference preparation.

    PYTHONPATH=src python benchmarks/sign_audit_cost.py tests/adversarial/08_tf32_operands_positive_long_k KernelBench/level1/1_*.py ... [--out DIR]

For each task folder, the reference worker's `prepare` runs in this process with the sign audit on and with
it off (its `choose` made to mix nothing: the judge before it), alternately, `--reps` times each after one
warm-up of each; prints per task the median seconds of each, their ratio and what was mixed, and writes
sign_audit_cost.json. The sign audit runs once per task and group of candidates (decide/reference_group.py),
so this is its whole cost. Tasks drawn with `randn` qualify for nothing and pay a min/max per input.
Exit 2 without a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch


def _prepare(worker: Any, task: Path, work: Path) -> tuple[float, dict[str, Any]]:
    began = time.perf_counter()
    reply = worker.prepare(str(task), str(work), 1234, [11, 12, 13, 14, 15], 99, 1e-2, 1e-2)
    torch.cuda.synchronize()
    return time.perf_counter() - began, reply


def measure(folder: Path, reps: int) -> dict[str, Any]:
    from cuda_agent.judge.trusted import reference_worker, sign_audit

    task = folder / "model.py" if folder.is_dir() else folder  # a suite folder or a KernelBench task file
    choose = sign_audit.choose
    worker = reference_worker.ReferenceWorker()
    seconds: dict[str, list[float]] = {"on": [], "off": []}
    mixed: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps + 1):
            for mode in ("off", "on"):
                sign_audit.choose = choose if mode == "on" else (lambda *a, **k: sign_audit.SignAudit())
                try:
                    took, reply = _prepare(worker, task, Path(tmp))
                finally:
                    sign_audit.choose = choose
                if rep:  # the first of each is a warm-up (CUDA context, kernels' first launches)
                    seconds[mode].append(took)
                if mode == "on":
                    mixed = reply.get("sign_audit", {})
        worker.end_judgment()
    on, off = statistics.median(seconds["on"]), statistics.median(seconds["off"])
    return {"task": folder.name if folder.is_dir() else folder.stem, "on_s": on, "off_s": off, "ratio": on / off, "sign_audit": mixed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="+", type=Path, help="task folders (each with model.py) or task files")
    parser.add_argument("--reps", type=int, default=3, help="timed preparations per mode (default 3)")
    parser.add_argument("--out", type=Path, default=Path("."), help="where sign_audit_cost.json goes")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("sign_audit_cost: no GPU visible; run it on a CUDA machine", file=sys.stderr)
        return 2
    rows = []
    print(f"{'task':48s} {'off s':>7s} {'on s':>7s} {'ratio':>6s}  mixed", flush=True)
    for index, folder in enumerate(args.tasks, 1):
        row = measure(folder, args.reps)
        rows.append(row)
        mixed = ", ".join(f"{k} x{v:g}" for k, v in row["sign_audit"].get("mixed", {}).items()) or "-"
        print(f"{row['task'][:48]:48s} {row['off_s']:7.2f} {row['on_s']:7.2f} {row['ratio']:6.2f}  {mixed}"
              f"   [{index}/{len(args.tasks)}]", flush=True)  # fmt: skip
    total_on, total_off = sum(r["on_s"] for r in rows), sum(r["off_s"] for r in rows)
    print(f"{'all':48s} {total_off:7.2f} {total_on:7.2f} {total_on / total_off:6.2f}")
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {"device": torch.cuda.get_device_name(), "rows": rows, "ratio": total_on / total_off}
    (args.out / "sign_audit_cost.json").write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
