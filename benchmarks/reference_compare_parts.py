"""Where the reference worker's time goes when it checks one candidate output (issue 34).

    PYTHONPATH=src python benchmarks/reference_compare_parts.py [examples/elementwise_chain ...] [--reps 5] [--out DIR]

A judgment asks the reference worker to check outputs at least 11 times: six verification sets
(`compare`), two changed sets of the low-bit pair (`compare_changed`) and three or more spot checks of timed
calls (`compare_timing`). On the H100 (docs/design/throughput.md, 2026-12-05) verification waited 0.89 s
on these comparisons for elementwise_chain and the spot checks took 0.44-1.05 s a verdict, but the worker's
call counts do not say which part of a comparison costs it. Here, for each task, the reference worker runs
in this process: `prepare`, then `compare` on set 1 and `compare_timing` on a fresh seed, `--reps` times
each after a warm-up, on outputs an honest candidate would hand over (the reference's own, in a tensor
file). Every part is wrapped in a timer that synchronises the GPU on entry and exit: the input draw, the
float64 truth and its confirmation, the reference's forward, the cut alternatives, reading the outputs,
and inside the decision the tolerance comparison, the layout check and the precision audit. "other" is the
rest of the call. Prints a table of median milliseconds per part and writes reference_compare_parts.json.
The synchronisation costs each part a little overlap it would otherwise have: the parts are where the
time goes, the sum is an upper bound on the call. Exit 2 without a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TASKS = ("elementwise_chain", "row_softmax", "layernorm", "gemm_bias_relu")
CALLS = ("compare", "compare_timing")


class Parts:
    """Milliseconds per part within the call being measured (`current`), GPU synchronised at each edge.
    Parts nest: a part's time excludes the parts inside it (the decision's comparison and audit are its
    own rows), and an `outer_only` part (the reference's forward) counts only where no other part runs it
    (inside the truth the forward is the truth's own float64 evaluation)."""

    def __init__(self) -> None:
        self.current: dict[str, float] | None = None
        self.inner: list[float] = []  # per open part: milliseconds of the parts inside it so far

    def timed(self, label: str, function: Callable[..., Any], outer_only: bool = False) -> Callable[..., Any]:
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            if self.current is None or (outer_only and self.inner):
                return function(*args, **kwargs)
            torch.cuda.synchronize()
            began = time.perf_counter()
            self.inner.append(0.0)
            try:
                return function(*args, **kwargs)
            finally:
                torch.cuda.synchronize()
                elapsed = (time.perf_counter() - began) * 1e3
                own = elapsed - self.inner.pop()
                if self.inner:
                    self.inner[-1] += elapsed
                if self.current is not None:
                    self.current[label] = self.current.get(label, 0.0) + own

        return run

    @contextlib.contextmanager
    def call(self) -> Iterator[dict[str, float]]:
        found: dict[str, float] = {}
        torch.cuda.synchronize()
        began, self.current = time.perf_counter(), found
        try:
            yield found
        finally:
            torch.cuda.synchronize()
            self.current = None
            found["total"] = (time.perf_counter() - began) * 1e3
            found["other"] = found["total"] - sum(v for k, v in found.items() if k != "total")


def instrument(worker: Any, parts: Parts) -> None:
    """Wrap the parts of a comparison: worker methods on the instance, module functions where they are
    looked up (output_verdict.py imports compare_tensor and the precision and layout modules)."""
    from cuda_agent.judge.trusted import output_verdict, reference_worker

    for name, label in (("_draw", "draw"), ("_cut_alternatives", "cut alternatives"), ("_read_outputs", "read outputs")):
        setattr(worker, name, parts.timed(label, getattr(worker, name)))
    if worker.exact is not None:
        worker.exact.outputs = parts.timed("truth", worker.exact.outputs)
        worker.exact.confirm = parts.timed("truth confirmed", worker.exact.confirm)
    worker.model.forward = parts.timed("reference forward", worker.model.forward, outer_only=True)
    output_verdict.compare_tensor = parts.timed("tolerance comparison", output_verdict.compare_tensor)
    output_verdict.layout.problem = parts.timed("layout", output_verdict.layout.problem)
    output_verdict.precision.audit = parts.timed("precision audit", output_verdict.precision.audit)
    reference_worker.judge_outputs = parts.timed("decision, the rest", reference_worker.judge_outputs)


def measure(folder: Path, reps: int) -> dict[str, Any]:
    """Median milliseconds per part of `compare` (set 1) and `compare_timing` (a fresh seed each rep)."""
    from cuda_agent.judge.common import tensorfile
    from cuda_agent.judge.trusted import reference_worker

    worker = reference_worker.ReferenceWorker()
    parts = Parts()
    found: dict[str, list[dict[str, float]]] = {call: [] for call in CALLS}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        reply = worker.prepare(str(folder / "model.py"), str(work), 1234, [11, 12, 13, 14, 15], 99, 1e-2, 1e-2)
        instrument(worker, parts)
        honest = work / "outputs.tensors"
        first = worker._reference_on(worker._draw(worker.input_seeds[0]), worker.tol, with_truth=False)[0]
        aliases: list[list[str]] = [[] for _ in first]  # an honest candidate's report: no output shares memory
        timed_seed = 5000
        for rep in range(reps + 1):
            for call in CALLS:
                if call == "compare_timing":  # a fresh timed call's outputs (the worker deletes what it read)
                    timed_seed += 1
                    tensorfile.save(worker._reference_on(worker._draw(timed_seed), worker.tol, with_truth=False)[0], honest)
                else:
                    tensorfile.save(first, honest)
                with parts.call() as measured:
                    if call == "compare":
                        verdict = worker.compare(0, str(honest), 1e-2, 1e-2, aliases=aliases, precision_k=3.0)
                    else:
                        verdict = worker.compare_timing(
                            timed_seed, str(honest), 1e-2, 1e-2, aliases=aliases, precision_k=3.0
                        )
                if not verdict.get("match"):
                    raise SystemExit(f"{folder.name}: the reference's own outputs were refused: {verdict.get('reason')}")
                if rep:  # the first is a warm-up (kernels' first launches, the allocator)
                    found[call].append(measured)
        worker.end_judgment()
    medians = {
        call: {part: statistics.median(run.get(part, 0.0) for run in runs) for part in sorted({p for r in runs for p in r})}
        for call, runs in found.items()
    }  # fmt: skip
    return {"task": folder.name, "precision": reply.get("precision"), "input_bytes": reply.get("input_bytes"),
            "ms": medians}  # fmt: skip


def table(results: list[dict[str, Any]]) -> str:
    lines = []
    for result in results:
        lines.append(f"\n{result['task']}  (truth: {result['precision']}; one input set {result['input_bytes'] or 0:,} bytes)")
        lines.append(f"  {'part':24s}" + "".join(f"{call:>16s}" for call in CALLS))
        labels = sorted({p for call in CALLS for p in result["ms"][call]}, key=lambda p: (p in ("other", "total"), p))
        for label in labels:
            lines.append(f"  {label:24s}" + "".join(f"{result['ms'][call].get(label, 0.0):13.1f} ms" for call in CALLS))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", type=Path, default=[ROOT / "examples" / name for name in DEFAULT_TASKS])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("reference_compare_parts: needs an NVIDIA GPU (the reference worker runs on one); nothing measured")
        return 2
    results = []
    for number, folder in enumerate(args.tasks, 1):
        print(f"[{number}/{len(args.tasks)}] {folder.name}", file=sys.stderr, flush=True)
        results.append(measure(folder, args.reps))
    print(f"{torch.cuda.get_device_name()}; median of {args.reps} after a warm-up; GPU synchronised at each part's edges")
    print(table(results))
    args.out.mkdir(parents=True, exist_ok=True)
    record = {"device": torch.cuda.get_device_name(), "reps": args.reps, "tasks": results}
    (args.out / "reference_compare_parts.json").write_text(json.dumps(record, indent=1))
    print(f"\nrecords: {args.out / 'reference_compare_parts.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
