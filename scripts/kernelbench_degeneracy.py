"""The judge's degeneracy audit over KernelBench: which tasks, at their current sizes, a trivial answer
passes on every input set (the judge's `task_error`), and why.

Each task runs in a child process of its own (a timeout and a crash cost that task only; forked from a
server that imported torch once, so a child does not pay the import), the judge's way
(`cuda_agent.judge.trusted.degeneracy.audit_task`: the model built and its parameters made to matter, five
input sets drawn from seeds with the task's own `get_inputs()`, each copied before the forward, one
`Audit`). On a GPU when there is one, else on the CPU, where tasks whose inputs and outputs exceed
`--max-mb` are skipped (sizes read on the meta device, nothing allocated) and each gets a short timeout
(`--budget` stops starting tasks after so many seconds, `--smallest-first` audits the most tasks in it).
Progress goes to stderr, a table to stdout, every task's record to `--json`, and the tasks still flagged,
with the stand-ins that pass and the output's magnitude, to `--markdown`. No network: the KernelBench
folder is read as it is.

    python scripts/kernelbench_degeneracy.py /path/to/KernelBench [--levels 1-3] [--device cuda]
        [--budget S --resume kb_degeneracy.json] [--jobs 4]
        [--json kb_degeneracy.json] [--markdown docs/kernelbench_degeneracy.md]
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from cuda_agent.eval.kernelbench import benchmark_root, discover, parse_levels  # noqa: E402
from cuda_agent.eval.kernelbench_runs import run_in_fork, run_tasks  # noqa: E402

SEEDS_BASE = 20_350_000  # fixed seeds, so a run can be repeated; the judge's are secret


def audit_one(path: Path, task_id: str, device: str, sets: int, max_input_mb: float | None) -> dict[str, Any]:
    """The audit of one task file, as a JSON-able record (run in the child)."""

    from cuda_agent.judge.common import math_policy
    from cuda_agent.judge.trusted.compare import Tolerance
    from cuda_agent.judge.trusted.degeneracy import audit_task
    from cuda_agent.task import import_task_module, load_task

    math_policy.pin()  # the reference worker's math (no TF32 convolutions), so its outputs are the judge's
    task = load_task(path)
    module = import_task_module(task, "kernelbench_task")
    if max_input_mb is not None:
        megabytes = meta_megabytes(module, task_id)
        if megabytes > max_input_mb:
            return {"status": "skipped", "reason": f"{megabytes:.0f} MB of inputs and outputs, over --max-mb {max_input_mb:g}"}
    seeds = [SEEDS_BASE + k for k in range(sets)]
    found = audit_task(module, task_id, seeds, Tolerance(), device=device)
    return {
        "status": "degenerate" if found.degenerate else "ok", "degenerate": found.degenerate,
        "per_set": found.per_set, "outputs": found.outputs, "low_order": found.low_order,
        "input_mb": round(found.input_bytes / 2**20, 1), "seconds": round(found.seconds, 2),
        "parameters_not_mattering": found.parameter_audit.get("do_not_matter", []),
        "sign_audit": found.sign_audit, "math_policy": math_policy.POLICY,
    }  # fmt: skip


def meta_megabytes(module: Any, task_id: str) -> float:
    """Megabytes of one input set and its outputs, from a run on the meta device (nothing allocated);
    the inputs alone where an op has no meta implementation."""
    import torch

    from cuda_agent.task import build_model, flatten_tensors

    def size(value: Any) -> float:
        return sum(t.numel() * t.element_size() for t in flatten_tensors(value)) / 2**20

    with torch.device("meta"):
        inputs = list(module.get_inputs())
        try:
            model, _ = build_model(module, task_id)
            with torch.no_grad():
                return size(inputs) + size(model(*inputs))
        except Exception:
            return size(inputs)


def _size_or_inf(bench: Any) -> float:
    from cuda_agent.task import import_task_module

    try:
        return meta_megabytes(import_task_module(bench.task, "kernelbench_size"), bench.task_id)
    except Exception:
        return float("inf")


# Modules every task's child needs, imported once in the fork server (eval/kernelbench_runs.py).
PRELOAD = ("torch", "cuda_agent.task", "cuda_agent.judge.trusted.degeneracy", "cuda_agent.judge.trusted.compare",
           "cuda_agent.judge.common.math_policy")  # fmt: skip


def run_task(bench: Any, args: argparse.Namespace, device: str) -> dict[str, Any]:
    """Audit `bench` in a child forked from the preloaded server: its record, or why there is none (an
    exception is the task's own failure, an op without a CPU kernel or out of memory, recorded with the
    frames that raised it)."""
    return run_in_fork(audit_one, (bench.path, bench.task_id, device, args.sets, args.max_input_mb), args.timeout,
                       PRELOAD)  # fmt: skip


def explain(record: dict[str, Any]) -> str:
    """Why a flagged task is degenerate, from the stand-ins that pass and the output's magnitude."""
    magnitudes = [
        f"|y| <= {o['max_abs']:.3g} (mean {o['mean_abs']:.3g})" for o in record.get("outputs", []) if "max_abs" in o
    ]
    return "; ".join(record["degenerate"]) + (f" -- output {', '.join(magnitudes)}" if magnitudes else "")


def devices_line(records: list[dict[str, Any]], device: str) -> str:
    """Where the audited records were made: one device, or how many on each (runs merged or resumed on
    another machine; a record made before records carried their device counts as the run's)."""
    audited = [r.get("device", device) for r in records if r["status"] in ("ok", "degenerate")]
    counts = {d: audited.count(d) for d in dict.fromkeys(audited)}
    if len(counts) <= 1:
        return f"device **{next(iter(counts), device)}**"
    return "devices " + ", ".join(f"**{d}** ({n} tasks)" for d, n in counts.items()) + (
        " (each record says where it ran. The question is whether a stand-in passes on the task's input "
        "distribution, which is the same on both: the same seeds, each device's own generator)")


def signs_line(records: list[dict[str, Any]]) -> str:
    """How many audited tasks had inputs given random signs, and how many had inputs of one sign refused."""
    audited = [r for r in records if r["status"] in ("ok", "degenerate")]
    mixed = sum(1 for r in audited if r.get("sign_audit", {}).get("mixed"))
    refused = sum(1 for r in audited if r.get("sign_audit", {}).get("refused") and not r["sign_audit"].get("mixed"))
    return f"{mixed} of {len(audited)} audited tasks had inputs given signs, {refused} kept them all as drawn"


def markdown(records: list[dict[str, Any]], args: argparse.Namespace, device: str, started: str) -> str:
    counts: dict[str, int] = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    lines = [
        "# KernelBench tasks the judge's degeneracy audit refuses",
        "",
        f"Made by `scripts/kernelbench_degeneracy.py` on {started}, {devices_line(records, device)}"
        + (" (CPU figures: tasks over the input limit or the timeout are not audited here; the GPU run "
           "audits them)" if device == "cpu" else "")
        + f"; {args.sets} input sets per task, atol = rtol = 1e-2, KernelBench's current problem sizes.",
        "",
        "A task is flagged (`task_error` in the judge) when one trivial stand-in passes the comparison on "
        "every input set: zeros, a constant (fitted on the first set), the output's first slice repeated or "
        "an input returned as drawn, at the judge's tolerance; or one quadratic of an input (fitted on the "
        "first set) with its error below a quarter of the tolerance everywhere. See "
        "`src/cuda_agent/judge/trusted/degeneracy.py` for why each.",
        "",
        "Inputs drawn all of one sign get random signs where the task is defined on both (the judge's sign "
        "audit, `src/cuda_agent/judge/trusted/sign_audit.py`; each record's `sign_audit` says which, and why "
        "not): " + signs_line(records) + ".",
        "",
        "Why KernelBench's tasks get flagged: its `get_inputs()` draw with `torch.rand`, uniform on [0, 1), so "
        "an activation that only changes negative values (ReLU, LeakyReLU, ELU, HardTanh) is the identity on "
        "them and a smooth one (Sigmoid, Softplus, SELU) is a quadratic within the tolerance on [0, 1); a "
        "reduction or a product over many such values concentrates (a mat-vec, a loss, attention over 1,024 "
        "keys whose softmax is nearly uniform, a global average), so every row or every draw is the same number "
        "within rtol = 1e-2. A kernel that returns that number or copies its input would be rewarded on such a "
        "task, so the judge refuses to judge it (`task_error`, naming the stand-in that passes).",
        "",
        "Level 3's image networks are flagged for another reason of the same kind: a deep network with "
        "random weights (ResNet-101, DenseNet, EfficientNet, MobileNet, GoogleNet, RegNet, SqueezeNet, ViT, "
        "Swin) maps every image drawn from [0, 1) to nearly the same logits, so returning the first image's "
        "output for the whole batch passes at atol = rtol = 1e-2 (`its first slice along dim 0 repeated`). "
        "KernelBench's own check would reward that kernel too. Such a task needs inputs or weights under which "
        "the images differ (trained weights, normalised inputs) before a kernel can be judged on it.",
        "",
        f"Every task's record: `{args.json}`.",
        "",
        "Counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" (of {len(records)} tasks).",
        "",
        "## Still flagged",
        "",
        "| task | what passes on every set, and the output's magnitude |",
        "|---|---|",
    ]  # fmt: skip
    flagged = [r for r in records if r["status"] == "degenerate"]
    mixed = len({r.get("device", device) for r in records if r["status"] in ("ok", "degenerate")}) > 1
    where = (lambda r: f" ({r.get('device', device)})") if mixed else (lambda r: "")
    lines += [f"| {r['task']}{where(r)} | {explain(r)} |" for r in flagged] or ["| (none) | |"]
    audited = [r for r in records if r["status"] == "ok"]
    lines += ["", "## Audited, not flagged", "", ", ".join(f"`{r['task']}`{where(r)}" for r in audited) or "(none)"]
    others = [r for r in records if r["status"] in ("skipped", "timeout", "error")]
    if others:
        lines += ["", "## Not audited in this run", "", "| task | status | why |", "|---|---|---|"]
        lines += [f"| {r['task']} | {r['status']} | {r.get('reason', '')} |" for r in others]
    return "\n".join(lines) + "\n"


def _audited(path: Path) -> dict[str, dict[str, Any]]:
    """The records of a previous run's tasks that were audited (not skipped for its budget or size), each
    naming the device it ran on (the run's, for records made before they said)."""
    run = json.loads(path.read_text())
    return {r["task"]: {"device": run["device"]} | r for r in run["tasks"] if r["status"] != "skipped"}


def merge(args: argparse.Namespace) -> int:
    """Several runs' records as one (e.g. a CPU run and a retry of some tasks with a longer timeout)."""
    runs = [json.loads(path.read_text()) for path in args.merge]
    by_task: dict[str, dict[str, Any]] = {}
    for run in runs:
        for record in run["tasks"]:
            by_task[record["task"]] = {"device": run["device"]} | record
    order = {task: i for i, task in enumerate(r["task"] for r in runs[0]["tasks"])}
    records = sorted(by_task.values(), key=lambda r: order.get(r["task"], len(order)))
    device, started, args.sets = runs[-1]["device"], runs[-1]["started"], runs[-1]["sets"]
    args.json.write_text(json.dumps({"device": device, "started": started, "sets": args.sets, "tasks": records}, indent=1))
    if args.markdown:
        args.markdown.write_text(markdown(records, args, device, started))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernelbench", nargs="?", type=Path, help="KernelBench checkout (or its KernelBench/ folder)")
    parser.add_argument("--levels", default="1-3")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument("--sets", type=int, default=5, help="input sets per task (the judge uses 5)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per task (default 600 GPU, 60 CPU)")
    parser.add_argument("--max-mb", dest="max_input_mb", type=float, default=None,
                        help="skip tasks whose inputs and outputs are larger (default: CPU 512)")
    parser.add_argument("--budget", type=float, default=None, help="stop starting tasks after this many seconds")
    parser.add_argument("--only", default="", help="only task ids containing this text")
    parser.add_argument("--smallest-first", action="store_true", help="order tasks by their meta-device size")
    parser.add_argument("--json", type=Path, default=Path("kb_degeneracy.json"))
    parser.add_argument("--markdown", type=Path, default=None)
    parser.add_argument("--merge", type=Path, nargs="+", default=None,
                        help="audit nothing: merge these --json files (later ones win per task) into --json/--markdown")
    parser.add_argument("--jobs", type=int, default=1, help="tasks audited at once, among those under --small-mb")
    parser.add_argument("--small-mb", type=float, default=512.0,
                        help="one input set and its outputs under this many MB (meta device) to run beside others")
    parser.add_argument("--resume", type=Path, default=None,
                        help="keep this --json file's audited tasks as they are and audit the rest (runs cut by a time limit)")
    args = parser.parse_args(argv)
    if args.merge:
        return merge(args)
    if args.kernelbench is None:
        parser.error("give the KernelBench folder")
    device = args.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        args.timeout = args.timeout or 60.0
        args.max_input_mb = 512.0 if args.max_input_mb is None else args.max_input_mb
    args.timeout = args.timeout or 600.0
    tasks = [t for t in discover(benchmark_root(args.kernelbench), parse_levels(args.levels)) if args.only in t.task_id]
    if args.smallest_first:
        tasks.sort(key=lambda t: _size_or_inf(t))
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    began = time.monotonic()
    done = _audited(args.resume) if args.resume else {}

    def save(finished: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        """The records so far, in task order, written to --json (a call cut at its limit keeps them)."""
        known = done | finished
        records = [known[t.task_id] for t in tasks if t.task_id in known]
        args.json.write_text(json.dumps({"device": device, "started": started, "sets": args.sets, "tasks": records},
                                        indent=1))  # fmt: skip
        return records

    def run(bench: Any) -> dict[str, Any]:
        return run_task(bench, args, device)

    def on_record(bench: Any, record: dict[str, Any], finished: dict[str, dict[str, Any]]) -> None:
        record["task"] = bench.task_id
        record["device"] = device
        note = "; ".join(record.get("degenerate", [])) or record.get("reason", "")
        print(f"[{len(done) + len(finished)}/{len(tasks)}] {bench.task_id:60s} {record['status']:10s} "
              f"{record.get('seconds', 0):7.1f}s {note}", file=sys.stderr, flush=True)  # fmt: skip
        save(finished)

    pending = [t for t in tasks if t.task_id not in done]
    # Small tasks side by side (each child's audit is its own; a task's inputs and outputs under --small-mb
    # leave the GPU to the others), the rest alone; one that errs or times out beside the others (out of
    # memory: a forward's activations are not in the size; CPUs shared) is audited again alone.
    small = [t for t in pending if _size_or_inf(t) < args.small_mb] if args.jobs > 1 else []
    if small:
        print(f"{len(small)} of {len(pending)} task(s) under {args.small_mb:g} MB: {args.jobs} at once", file=sys.stderr)
    finished = run_tasks(pending, run, side_by_side=small, jobs=args.jobs, budget_s=args.budget, began=began,
                         on_record=on_record, again_alone=lambda record: record.get("status") in ("error", "timeout"))  # fmt: skip
    records = save(finished)
    print(f"\n{'task':60s} {'status':10s} stand-ins passing on every set / why not audited")
    for r in records:
        print(f"{r['task']:60s} {r['status']:10s} {'; '.join(r.get('degenerate', [])) or r.get('reason', '')}")
    if args.markdown:
        args.markdown.write_text(markdown(records, args, device, started))
    flagged = sum(r["status"] == "degenerate" for r in records)
    print(f"\n{flagged} flagged of {len(records)}; records in {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
