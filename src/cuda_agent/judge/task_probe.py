"""Run a task's reference once on the meta device, in a child process, and report what it did.

`python -m cuda_agent.judge.task_probe model.py` prints one JSON object: `ok`, the output shapes and
dtypes, the ATen ops its forward ran (what the cuBLAS/cuDNN rules of the static checks need), or the
error that makes the task unusable. The CPU checks (`judge --build-only`, `utils/compile.sh`) run it in
a child so that a task that hangs, crashes or leaks state is bounded in time and cannot touch the caller.
The meta device computes shapes, not values: it needs no GPU and no memory for the tensors.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

UNSUPPORTED = "unsupported"  # the task has ops without a meta implementation: checked statically only


def probe(path: Path) -> dict[str, Any]:
    """What the judge's reference worker would learn on a GPU, minus the values."""
    from cuda_agent.task import TaskError, flatten_tensors, import_task_module, instantiate, load_task

    try:
        task = load_task(path)
        import torch

        from cuda_agent.judge.opgate import OpGate

        module = import_task_module(task)
        with torch.device("meta"):
            model, _, inputs = instantiate(module, task.name)
            inputs = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in inputs]
            recorder = OpGate(poison=False)
            try:
                with torch.no_grad(), recorder:
                    output = model.eval()(*inputs)
            except NotImplementedError as exc:
                note = re.sub(r"\s+", " ", str(exc)).strip()[:300]
                return {"ok": True, "meta": UNSUPPORTED, "note": note, "ops": None, "outputs": []}
            except Exception as exc:
                message = re.sub(r"\s+", " ", str(exc)).strip()[:500]
                raise TaskError(
                    f"task {task.name}: Model fails on its own inputs: {type(exc).__name__}: {message}"
                ) from exc
        outputs = flatten_tensors(output)
        if not outputs:
            raise TaskError(f"task {task.name}: Model.forward returned no tensors")
    except TaskError as exc:
        return {"ok": False, "error": str(exc)}
    shapes = [[list(t.shape), str(t.dtype).removeprefix("torch.")] for t in outputs]
    return {"ok": True, "meta": "checked", "ops": sorted(recorder.seen), "outputs": shapes}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m cuda_agent.judge.task_probe model.py", file=sys.stderr)
        return 2
    print(json.dumps(probe(Path(argv[0]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
