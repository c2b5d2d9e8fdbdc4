"""Run a task's reference once on the meta device, in a child process, and report what it did.

`python -m cuda_agent.judge.trusted.task_probe model.py` prints one JSON object: `ok`, the output shapes and
dtypes, the ATen ops its forward ran (what the cuBLAS/cuDNN rules of the static checks need), or the
error that makes the task unusable. The CPU checks (`judge --build-only`, `utils/compile.sh`) run it in
a child so that a task that hangs, crashes or leaks state is bounded in time and cannot touch the caller.
The meta device computes shapes, not values: it needs no GPU and no memory for the tensors.

Trust boundary: runs the task's reference (trusted code), never the candidate's. Facts it establishes
for the CPU checks: the task loads, its output shapes, and the ATen ops it runs (the cuBLAS/cuDNN rules).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

UNSUPPORTED = "unsupported"  # the task has ops without a meta implementation: checked statically only
MAX_ERROR_CHARS = 600  # the reason travels to the parent as one JSON line: bounded


def probe(path: Path) -> dict[str, Any]:
    """What the judge's reference worker would learn on a GPU, minus the values."""
    from cuda_agent.task import MetaUnsupported, TaskError, check_task_runs, load_task

    try:
        task = load_task(path)
        from cuda_agent.judge.candidate.opgate import OpGate

        recorder = OpGate(poison=False)
        outputs = check_task_runs(task, "meta", watch=recorder)
    except MetaUnsupported as exc:
        note = re.sub(r"\s+", " ", str(exc.__cause__ or exc)).strip()[:300]
        return {"ok": True, "meta": UNSUPPORTED, "note": note, "ops": None, "outputs": []}
    except TaskError as exc:
        return {"ok": False, "error": str(exc)[:MAX_ERROR_CHARS]}
    shapes = [[list(shape), dtype] for shape, dtype in outputs]
    return {"ok": True, "meta": "checked", "ops": sorted(recorder.seen), "outputs": shapes}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m cuda_agent.judge.trusted.task_probe model.py", file=sys.stderr)
        return 2
    print(json.dumps(probe(Path(argv[0]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
