"""The judge's reference preparation over KernelBench at its current sizes: for every task, the GPU memory
it peaks at, how long it takes, and the task_error a task that does not fit gets (issue 29 item 1).

Each task runs in a child process of its own (a timeout, a crash or an out-of-memory cost that task only),
forked from a server that imported torch and the judge once.
The child runs the judge's own code, `ReferenceWorker.prepare` (trusted/reference_worker.py: the model
built, its parameters made to matter and moved to a generic point, the input audit, five input sets with
their outputs and float64 truths, the degeneracy audit) and, unless `--no-baselines`, `time_setup` (the
eager and torch.compile warm-ups before timing, where Max_Pooling ran out on 2026-12-03), and reports
`torch.cuda.max_memory_allocated`, after one eager and one torch.compile round of the judge's size
for the task (decide/round_size.py), with a candidate's round of the same size held beside them. `--memory-gb 80` caps the process at 80 GB
(`torch.cuda.set_per_process_memory_fraction`) to list what does not fit on an H100. Progress goes to
stderr, a table to stdout, every task's record to `--json`, the table (with what a judgment of each task
ends with, and a summary) to `--markdown`, and a plot of the peaks to `--plot`.

    python scripts/kernelbench_memory.py /path/to/KernelBench [--levels 1-3] [--memory-gb 80]
        [--json kb_memory.json] [--markdown docs/kernelbench_memory.md] [--plot docs/kernelbench_memory.png]
        [--only Softsign] [--budget S] [--resume [--retry-timeouts]]
    python scripts/kernelbench_memory.py /path/to/KernelBench --estimate 141     (no GPU: sizes from shapes)
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from cuda_agent.eval.kernelbench import benchmark_root, discover, parse_levels  # noqa: E402

SEEDS = [20_360_000 + k for k in range(5)]  # fixed, so a run can be repeated; the judge's are secret
GIB = float(1 << 30)


def prepare_one(path: Path, memory_gb: float | None, baselines: bool, beside_others: bool = False) -> dict[str, Any]:
    """The judge's preparation of one task (run in the child), as a JSON-able record. `beside_others`: other
    tasks' children share the GPU, and this one's plans must still be the ones it makes alone (`see_gpu`)."""
    import torch

    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.decide.round_size import round_size
    from cuda_agent.judge.trusted.reference_memory import TaskDoesNotFit
    from cuda_agent.judge.trusted.reference_worker import ReferenceWorker

    total = see_gpu(memory_gb, beside_others)
    worker = ReferenceWorker()
    began = time.monotonic()
    record: dict[str, Any] = {"gpu_gib": round(total / GIB, 1)}
    try:
        with tempfile.TemporaryDirectory() as work:
            reply = worker.prepare(str(path), work, 1, SEEDS, SEEDS[-1] + 1, 1e-2, 1e-2)
            record["prepare_s"] = round(time.monotonic() - began, 2)
            if reply.get("stateful"):  # trusted/stateful.py: its preparation stops there, with no timing sets
                record.update(status="task_error", reason=reply["stateful"], stateful=reply["stateful"])
            else:
                record.update(status="ok", kept_sets=reply.get("kept_sets"), precision=reply.get("precision"),
                              degenerate=reply.get("degenerate"), input_problem=reply.get("input_problem"),
                              sign_audit=reply.get("sign_audit"))  # fmt: skip
                if baselines:
                    timing = JudgeConfig().timing
                    plan = round_size(timing.samples_per_round, reply.get("input_bytes"), reply.get("output_bytes"),
                                      reply.get("gpu_bytes"), timing.round_memory_share)  # fmt: skip
                    record["round_calls"] = plan.calls
                    worker.time_setup(["eager", "compile"], compile_builds=1, build_windows=1, samples=plan.calls)
                    # The candidate's last round stays alive while a baseline round runs (decide/round_size.py):
                    # the same inputs and outputs held here while one eager and one torch.compile round run.
                    with torch.no_grad():
                        held = [(inputs, worker.model(*inputs)) for inputs in
                                (worker._draw(seed) for seed in range(SEEDS[0], SEEDS[0] + plan.calls))]  # fmt: skip
                    worker.time_round("eager", plan.calls)
                    worker.time_round("compile", plan.calls)
                    del held
    except TaskDoesNotFit as exc:
        record.update(status="task_error", reason=str(exc))
    except torch.cuda.OutOfMemoryError as exc:  # past the preparation: the baselines' warm-up or rounds
        record.update(status="oom_baselines", reason=str(exc).splitlines()[0][:300])
    except Exception as exc:
        record.update(status="error", reason=f"{type(exc).__name__}: {str(exc)[:300]}")
    record["seconds"] = round(time.monotonic() - began, 2)
    record["peak_gib"] = round(torch.cuda.max_memory_allocated() / GIB, 2)
    # Out-of-memory errors the judge absorbed (the truth's blocks halve on one): beside others they may be
    # the neighbours' doing, and the plan that came of them smaller than alone (`again_alone` below).
    record["ooms"] = int(torch.cuda.memory_stats().get("num_ooms", 0))
    record.update({f"{k} GiB": round(v / GIB, 2) for k, v in worker.sizes.items()})
    return record


CONTEXT_BYTES = 600 << 20  # about what a CUDA context takes of an H100's or H200's memory, outside torch's allocator


def see_gpu(memory_gb: float | None, beside_others: bool) -> int:
    """Make this process see the GPU the way the judge's memory plans would read it on the GPU the record
    is for, and return that GPU's total.

    - `memory_gb` (an 80 GB GPU emulated on an H200): the allocator capped (`set_per_process_memory_fraction`),
      and the total and free memory the plans read (`torch.cuda.mem_get_info`, `reference_memory.
      gpu_total_bytes`) reported as that GPU's. With the cap alone the plans (kept sets, a round's calls,
      the truth's blocks) were made for the whole H200 and only the allocator stopped at 80 GB: a harsher
      test than a real H100 gives.
    - `beside_others` (other tasks' children on the same GPU): free memory reported as this process alone
      would find it (the total less its own reservations and context), not less what the neighbours hold.
      The truth's blocks are sized from free memory (trusted/truth_rows.py): read beside others they
      would come out smaller and the peak lower than alone. A plan that does not fit beside the neighbours
      runs out of memory, and that task is run again alone (`run_tasks`' `again_alone`), also where the
      judge absorbed the error (the truth halves its block on one: the record's `ooms`): on 2026-12-07
      (H100, eight at once) 10 of 83 "small" tasks ran out of memory beside the others and 5 passed 60 s,
      their neighbours holding 15-29 GiB each (a forward's activations are not in the small-task estimate)."""
    import torch

    from cuda_agent.judge.trusted import reference_memory

    real_total = torch.cuda.get_device_properties(0).total_memory
    total = real_total if memory_gb is None else min(int(memory_gb * 1e9), real_total)
    if memory_gb is not None:
        torch.cuda.set_per_process_memory_fraction(min(1.0, total / real_total))
        reference_memory.gpu_total_bytes = lambda: total
    if memory_gb is None and not beside_others:
        return total
    real = torch.cuda.mem_get_info

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        free, _ = real() if device is None else real(device)
        own_bound = total - torch.cuda.memory_reserved()
        alone = own_bound - CONTEXT_BYTES
        return max(0, alone if beside_others else min(free, alone)), total

    torch.cuda.mem_get_info = mem_get_info
    return total


def estimate_one(path: Path, gpu_gb: float) -> dict[str, Any]:
    """One call's sizes from the task's shapes alone (no GPU): the model built and run on PyTorch's meta
    device, which allocates nothing, and the calls a timed round gets on a GPU of `gpu_gb` GB."""
    import importlib.util

    import torch

    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.decide.round_size import round_size

    def size(value: Any) -> int:
        if isinstance(value, torch.Tensor):
            return value.numel() * value.element_size()
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else []
        return sum(size(v) for v in items)

    spec = importlib.util.spec_from_file_location(f"kb_estimate_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        with torch.device("meta"), torch.no_grad():
            spec.loader.exec_module(module)
            model = module.Model(*module.get_init_inputs())
            inputs = module.get_inputs()
            outputs = model(*inputs)
    except Exception as exc:  # ops without a meta kernel, data-dependent shapes (.item()), missing packages
        return {"status": "not estimated", "reason": f"{type(exc).__name__}: {str(exc)[:200]}"}
    one_in, one_out = size(inputs), size(outputs)
    timing = JudgeConfig().timing
    plan = round_size(timing.samples_per_round, one_in, one_out, int(gpu_gb * 1e9), timing.round_memory_share)
    return {"status": "estimated", "one input set GiB": round(one_in / GIB, 2), "one output GiB": round(one_out / GIB, 2),
            "parameters GiB": round(sum(size(t) for t in model.state_dict().values()) / GIB, 2),
            "round_calls": plan.calls}  # fmt: skip


# Modules every task's child needs, imported once in the fork server (eval/kernelbench_runs.py).
PRELOAD = ("torch", "cuda_agent.judge.config", "cuda_agent.judge.decide.round_size",
           "cuda_agent.judge.trusted.reference_worker")  # fmt: skip


def run_child(bench: Any, args: argparse.Namespace, beside_others: bool = False) -> dict[str, Any]:
    """`prepare_one` of `bench` in a child forked from the preloaded server (a crash, an out-of-memory error
    or a timeout costs that task only)."""
    from cuda_agent.eval.kernelbench_runs import run_in_fork

    record = run_in_fork(prepare_one, (bench.path, args.memory_gb, not args.no_baselines, beside_others),
                         args.timeout, PRELOAD)  # fmt: skip
    return {**record, "ran_beside_others": True} if beside_others and record.get("status") == "ok" else record


def truth_of(record: dict[str, Any]) -> str:
    """The float64 truth the preparation made, in a few words ("" where it did not get that far)."""
    precision = str(record.get("precision") or "")
    if not precision:
        return ""
    if precision.startswith("none"):
        return precision[:120]
    blocks = re.search(r"on blocks of (\d+) rows", precision)
    generic = re.search(r"generic bound for (.*)", precision)
    return ("blocks of " + blocks.group(1) + " rows" if blocks else "whole batch") + (
        f"; generic bound for {generic.group(1)[:80]}" if generic else "")  # fmt: skip


def judged_as(record: dict[str, Any]) -> str:
    """What a judgment of the task ends with, as far as its preparation decides it: the preparation's own
    failure, a `task_error` by the judge's own rules (`task_error_of`, decide/reference_stage.py: the task
    keeps state, is degenerate or ignores an input), a reward capped at 1 where no truth could be made
    (`no_precision_truth`), else judged in full. Each as a short kind, so that the summary can count them."""
    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.decide.reference_stage import task_error_of

    status = record.get("status")
    if status == "task_error":
        return "task_error: task keeps state between calls" if record.get("stateful") else "task_error: does not fit"
    if status != "ok":
        return "" if status == "skipped" else f"not known ({status} in the sweep)"
    config = JudgeConfig()
    if why := task_error_of(record, config.atol, config.rtol):
        return "task_error: " + why.split(":")[0]
    if str(record.get("precision") or "").startswith("none"):
        return "reward capped at 1: no float64 truth"
    return "judged"


def table(records: list[dict[str, Any]]) -> list[str]:
    rows = ["| task | status | peak GiB | one input set GiB | outputs kept | calls a round | seconds | float64 truth "
            "| a judgment | reason |", "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in records:
        kept = {None: "", 0: "none (made again)"}.get(r.get("kept_sets"), "all")
        rows.append(f"| {r['task']} | {r['status']} | {r.get('peak_gib', '')} | {r.get('one input set GiB', '')} | "
                    f"{kept} | {r.get('round_calls', '')} | {r.get('seconds', '')} | {truth_of(r)} | {judged_as(r)} | "
                    f"{str(r.get('reason', ''))[:200]} |")  # fmt: skip
    return rows


def summary(records: list[dict[str, Any]]) -> list[str]:
    """The table's first lines: how many tasks ended how, what a judgment of each would end with, and
    the largest peaks, so that a reader sees what does not fit or is not judged in full without the rows."""
    statuses = Counter(str(r.get("status")) for r in records)
    judged = Counter(judged_as(r) for r in records if judged_as(r))
    peaks = sorted((r for r in records if r.get("peak_gib") is not None), key=lambda r: -float(r["peak_gib"]))[:5]
    lines = [f"- {len(records)} tasks: " + ", ".join(f"{n} {status}" for status, n in statuses.most_common()),
             "- a judgment of them: " + ", ".join(f"{n} {what}" for what, n in judged.most_common()),
             "- largest peaks: " + ", ".join(f"{r['task']} {r['peak_gib']} GiB" for r in peaks)]  # fmt: skip
    for what in sorted(what for what in judged if what.startswith(("task_error", "reward capped"))):
        lines.append(f"- {what}: {', '.join(r['task'] for r in records if judged_as(r) == what)}")
    if slow := [r["task"] for r in records if r.get("status") == "timeout"]:
        lines.append(f"- past their time limit (no peak): {', '.join(slow)}")
    return [*lines, ""]


H100_GIB, H200_GIB = 79.2, 139.8  # what torch reports as each card's total (an H100 80GB HBM3, an H200)


def plot_peaks(records: list[dict[str, Any]], path: Path, title: str) -> Path:
    """Each measured task's peak against the GPU sizes that matter (the pass's GPU, an H100's, an H200's),
    sorted, by level, with the tasks a judgment does not judge in full marked: what fits is seen at a glance.
    Written with matplotlib's Agg backend (no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = sorted((r for r in records if r.get("peak_gib") is not None and r.get("status") != "skipped"),
                      key=lambda r: float(r["peak_gib"]))  # fmt: skip
    figure, axes = plt.subplots(figsize=(10, 4.5))
    colors = {"level1": "#1f77b4", "level2": "#ff7f0e", "level3": "#2ca02c"}
    for level, color in colors.items():
        points = [(i, float(r["peak_gib"])) for i, r in enumerate(measured) if r["task"].startswith(level + "/")]
        if points:
            axes.scatter(*zip(*points, strict=True), s=12, color=color, label=level)
    marked = [(i, float(r["peak_gib"])) for i, r in enumerate(measured) if judged_as(r) != "judged"]
    if marked:
        axes.scatter(*zip(*marked, strict=True), s=70, facecolors="none", edgecolors="#d62728",
                     label="not judged in full (task_error or reward capped)")  # fmt: skip
    # The memory the pass's GPU offered (a card's, or the cap's), and an H100's and an H200's as torch reports them.
    lines = {float(r["gpu_gib"]): "this pass's GPU" for r in measured if r.get("gpu_gib")}
    for gib, name in ((H100_GIB, "an H100 80GB"), (H200_GIB, "an H200")):
        lines.setdefault(gib, name)
    for gib, name in sorted(lines.items()):
        axes.axhline(gib, color="#7f7f7f", linestyle="--", linewidth=1)
        axes.text(0, gib, f" {name}: {gib:g} GiB", va="bottom", fontsize=8, color="#555555")
    axes.set_xlabel(f"tasks measured, by peak ({len(measured)} of {len(records)})")
    axes.set_ylabel("peak GPU memory, GiB")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.9))
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def estimate_table(records: list[dict[str, Any]]) -> list[str]:
    rows = ["| task | one input set GiB | one output GiB | parameters GiB | calls a round | note |", "|---|---|---|---|---|---|"]
    for r in records:
        rows.append(f"| {r['task']} | {r.get('one input set GiB', '')} | {r.get('one output GiB', '')} | "
                    f"{r.get('parameters GiB', '')} | {r.get('round_calls', '')} | {str(r.get('reason', ''))[:120]} |")  # fmt: skip
    return rows


def footprint_gib(record: dict[str, Any]) -> float | None:
    """One input set + one output + the parameters, from an estimate (None: not estimated)."""
    if record.get("status") != "estimated":
        return None
    return sum(float(record.get(k) or 0.0) for k in ("one input set GiB", "one output GiB", "parameters GiB"))


def inferred_under_cap(whole: dict[str, Any] | None, memory_gb: float, share: float) -> dict[str, Any] | None:
    """The capped run's record of a task, without running it, where the whole-GPU run shows it fits: it was
    prepared (`ok`) with a peak below `share` of the cap. Sound because every memory plan of the judge only
    shrinks on a smaller GPU (fewer kept sets, fewer calls a round, smaller truth blocks): the peak under
    the cap is at most the whole GPU's. Said so in the record."""
    if not whole or whole.get("status") != "ok" or whole.get("peak_gib") is None:
        return None
    limit = share * memory_gb * 1e9 / GIB
    if float(whole["peak_gib"]) >= limit:
        return None
    return {**{k: v for k, v in whole.items() if k != "task"}, "inferred": True,
            "reason": f"not run capped: its peak on the whole GPU, {whole['peak_gib']} GiB, is below "
                      f"{limit:.0f} GiB ({share:g} of {memory_gb:g} GB), and the judge's plans only shrink on a "
                      "smaller GPU"}  # fmt: skip


def resumed(path: Path) -> dict[str, dict]:
    """The records of an earlier run in `path` worth keeping (not skipped), by task id; none if unreadable."""
    try:
        tasks = json.loads(path.read_text())["tasks"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {r["task"]: r for r in tasks if isinstance(r, dict) and "task" in r and r.get("status") != "skipped"}


def short_timeout(record: dict[str, Any], limit: float) -> bool:
    """A timeout recorded under a shorter limit than `limit`: its peak is owed by a run that long
    (`--retry-timeouts`: DenseNet201 ran past 120 s alone on an H100, 2026-12-07, so its peak is owed, not a
    property of the task; kernelbench_memory_all.sh asks the same of a pass's records)."""
    return record.get("status") == "timeout" and float(record.get("seconds") or 0) < limit


def first_started(path: Path) -> str | None:
    """When the run that `path` resumes began (its records span several calls; the first names the run)."""
    try:
        started = json.loads(path.read_text()).get("started")
    except (OSError, ValueError, AttributeError):
        return None
    return started if isinstance(started, str) else None


def run_pending(benches: list[Any], args: argparse.Namespace, began: float, save: Any, offset: int = 0) -> dict[str, dict[str, Any]]:
    """Each task's record by id: estimated, or prepared in a child of its own; with `--jobs` > 1 the tasks
    whose one call is small run that many at once first (each child's peak is its own allocator's and its
    plans are the ones it makes alone, `see_gpu`, so neighbours do not change it; their seconds do grow),
    any of them that did not end `ok` runs again alone, then the rest one at a time
    (eval/kernelbench_runs.py). `save(records so far)` after each one; progress counts from `offset`
    (the tasks an earlier run recorded)."""
    from cuda_agent.eval.kernelbench_runs import run_tasks

    def run(bench: Any) -> dict[str, Any]:
        return estimate_one(bench.path, args.estimate) if args.estimate is not None else run_child(bench, args)

    def on_record(bench: Any, record: dict[str, Any], results: dict[str, dict[str, Any]]) -> None:
        print(f"[{offset + len(results)}/{offset + len(benches)}] {bench.task_id}: {record['status']} peak "
              f"{record.get('peak_gib', '-')} GiB in {record.get('seconds', '-')} s, "
              f"{record.get('round_calls', '-')} calls a round", file=sys.stderr, flush=True)  # fmt: skip
        save(results)

    small: list[Any] = []
    if args.jobs > 1 and args.estimate is None:
        small = [b for b in benches if (f := footprint_gib(estimate_one(b.path, 141))) is not None and f < args.small_gib]
        print(f"{len(small)} of {len(benches)} task(s) small enough to run {args.jobs} at once", file=sys.stderr, flush=True)
    return run_tasks(benches, run, side_by_side=small, jobs=args.jobs, budget_s=args.budget, began=began,
                     on_record=on_record, run_beside=lambda bench: run_child(bench, args, beside_others=True),
                     again_alone=lambda record: record.get("status") != "ok" or bool(record.get("ooms")))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernelbench", nargs="?", type=Path, help="KernelBench checkout (or its KernelBench/ folder)")
    parser.add_argument("--levels", default="1-3")
    parser.add_argument("--memory-gb", type=float, default=None, help="cap the judge at this many GB (80: an H100)")
    parser.add_argument("--no-baselines", action="store_true", help="the preparation only, no eager/compile warm-up")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per task (default 600)")
    parser.add_argument("--budget", type=float, default=None, help="stop starting tasks after this many seconds")
    parser.add_argument("--only", default="", help="only task ids containing this text")
    parser.add_argument("--json", type=Path, default=Path("kb_memory.json"))
    parser.add_argument("--markdown", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None,
                        help="a PNG of each task's peak against the pass's GPU and an H100's and H200's memory")  # fmt: skip
    parser.add_argument("--estimate", type=float, metavar="GPU_GB", default=None,
                        help="no GPU: one call's sizes from the tasks' shapes (meta tensors) and the calls a timed "
                             "round gets on a GPU of this many GB")  # fmt: skip
    parser.add_argument("--resume", action="store_true",
                        help="keep the records already in --json and run only the tasks it lacks (or skipped): "
                             "the whole of KernelBench takes about an hour, over several 10-minute device calls")  # fmt: skip
    parser.add_argument("--retry-timeouts", action="store_true",
                        help="with --resume: run again each task whose recorded timeout was shorter than this "
                             "run's --timeout (a last pass with a longer limit for the slow tasks)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1,
                        help="tasks run at once, for tasks whose one call (inputs + output + parameters, estimated "
                             "on the meta device) is below --small-gib; the others run alone")  # fmt: skip
    parser.add_argument("--small-gib", type=float, default=0.5,
                        help="at most this many GiB a call to run beside others: the float64 truth alone holds 28x "
                             "one call's float32 inputs (trusted/truth_rows.py), 14 GiB at 0.5, so four such "
                             "children stay far below an H200 and none plans for memory another holds")  # fmt: skip
    parser.add_argument("--whole-gpu", type=Path, default=None,
                        help="with --memory-gb: the whole-GPU run's --json; its tasks prepared with a peak below "
                             "--cap-share of the cap are recorded as fitting (inferred_under_cap), not run again")  # fmt: skip
    parser.add_argument("--cap-share", type=float, default=0.8)
    args = parser.parse_args(argv)
    if args.kernelbench is None:
        parser.error("give the KernelBench checkout")
    benches = [b for b in discover(benchmark_root(args.kernelbench), parse_levels(args.levels)) if args.only in b.task_id]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    started = (first_started(args.json) if args.resume else None) or now
    began = time.monotonic()
    earlier = resumed(args.json) if args.resume else {}
    # --retry-timeouts: timeouts under this run's limit run again. One the budget never starts keeps its
    # record: `skipped` in its place would send it back to the short-limit pass (kernelbench_memory_all.sh's
    # `complete`), which cuts it again.
    retried = {task: r for task, r in earlier.items() if args.retry_timeouts and short_timeout(r, args.timeout)}
    done = {task: r for task, r in earlier.items() if task not in retried}
    if done:
        print(f"resuming: {len(done)} task(s) already in {args.json}", file=sys.stderr, flush=True)
    if args.whole_gpu is not None and args.memory_gb:
        whole = {**resumed(args.whole_gpu)}
        for bench in benches:
            if bench.task_id not in done and (hit := inferred_under_cap(whole.get(bench.task_id), args.memory_gb, args.cap_share)):
                done[bench.task_id] = hit
    def save(finished: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        """The records so far, in task order, written to --json (a call cut at its limit keeps them)."""
        known = done | {task: retried[task] if r.get("status") == "skipped" and task in retried else r
                        for task, r in finished.items()}  # fmt: skip
        records = [{**known[b.task_id], "task": b.task_id} for b in benches if b.task_id in known]
        args.json.write_text(json.dumps({"started": started, "updated": now, "memory_gb": args.memory_gb,
                                         "tasks": records}, indent=1))  # fmt: skip
        return records

    records = save(run_pending([b for b in benches if b.task_id not in done], args, began, save, len(done)))
    rows = estimate_table(records) if args.estimate is not None else table(records)
    print("\n".join(rows))
    if args.markdown:
        if args.estimate is not None:
            head = (f"# One call's sizes over KernelBench, estimated from shapes\n\nMade by `scripts/kernelbench_memory.py "
                    f"--estimate {args.estimate:g}` on {started}: no GPU, the tasks run on PyTorch's meta device; calls a "
                    f"round on a GPU of {args.estimate:g} GB (decide/round_size.py).\n\n")  # fmt: skip
        else:
            head = (f"# The judge's reference preparation over KernelBench\n\nMade by `scripts/kernelbench_memory.py` on "
                    f"{started}" + (f" to {now}" if now != started else "")
                    + (f", the judge capped at {args.memory_gb:g} GB" if args.memory_gb else "") + ".\n\n"
                    + "\n".join(summary(records)) + "\n")  # fmt: skip
        args.markdown.write_text(head + "\n".join(rows) + "\n")
    if args.plot and args.estimate is None:
        capped = f", capped at {args.memory_gb:g} GB" if args.memory_gb else ""
        plot_peaks(records, args.plot, f"The judge's peak memory over KernelBench{capped} ({started})")
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0 if all(r["status"] in ("ok", "skipped", "estimated") for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
