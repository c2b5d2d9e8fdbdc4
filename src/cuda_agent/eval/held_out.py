"""`cuda-agent eval --held-out-shapes RUN/`: are a run's correct kernels correct at other sizes?

Every record judged correct whose submission is in the bundle is judged again on its task's held-out
variants (eval/shape_variants.py: the sizes `get_inputs()` reads, halved and made odd, the model's own
sizes kept), for correctness only: the judge's verification (five input sets, a repeat, the precision
audit, the coverage gate) with timing off. A kernel generalises when it is correct on every variant of
its task. The pass rate over kernels that have variants is its own metric: it never changes a reward.

Each variant is a copy of the submission with the variant's `model.py` beside its `model_new.py` (so a
`model_new.py` that imports the task's sizes sees the new ones), under RUN/held_out/<task>/ep<k>/<variant>.
Results go to RUN/held_out.json; the report shows them when the file is there. A judge that cannot run
here stops the pass at its first judgment with `JudgeUnavailableHere`, before anything is written.
"""

from __future__ import annotations

import secrets
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cuda_agent.agent.judging import UNAVAILABLE
from cuda_agent.eval import bundle
from cuda_agent.eval.judges import Backend, Item, leased
from cuda_agent.eval.kernelbench import slug_of
from cuda_agent.eval.recheck import JudgeUnavailableHere
from cuda_agent.eval.records import read_records
from cuda_agent.eval.report import HELD_OUT_RESULT
from cuda_agent.eval.shape_variants import VARIANTS, shape_variants
from cuda_agent.task import TaskError, load_task

RESULT = HELD_OUT_RESULT


def held_out(run_dir: Path, backend: Backend, say: Callable[[str], None]) -> dict[str, Any]:
    """Judge every correct kernel of the run on its task's held-out variants; returns (and writes to
    RUN/held_out.json) the results."""
    run_dir = Path(run_dir)
    records = read_records(run_dir / "records.jsonl")
    if not records:
        raise ValueError(f"{run_dir / 'records.jsonl'} holds no records: nothing to check")
    nonce = secrets.token_hex(6)
    items: list[Item] = []
    owners: list[tuple[int, str, dict[str, Any]]] = []  # per item: (kernel index, variant, sizes)
    kernels: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for record in records:
        if record.status != "ok":
            continue
        slug = slug_of(record.level, record.problem, record.name)
        folder = run_dir / bundle.episode_dir("submissions", slug, record.episode)
        entry: dict[str, Any] = {"task_id": record.task_id, "episode": record.episode}
        try:
            task = load_task(folder / "model.py", name=slug)
        except TaskError as exc:
            skipped.append({**entry, "reason": f"no usable submission in the bundle: {exc}"})
            continue
        variants, reason = shape_variants(task)
        if reason is not None:
            skipped.append({**entry, "reason": reason})
            continue
        entry["variants"] = {}
        kernels.append(entry)
        for variant in variants:
            copy = run_dir / "held_out" / slug / f"ep{record.episode}" / variant.name
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(folder, copy)
            (copy / "model.py").write_text(variant.task.source, encoding="utf-8")
            items.append(
                (copy, variant.task, f"held-out-{nonce}-{slug}-ep{record.episode}-{variant.name}"[:120])
            )
            owners.append((len(kernels) - 1, variant.name, variant.sizes))
    say(f"held-out shapes: {len(items)} variant judgment(s) of {len(kernels)} correct kernel(s) of {run_dir} "
        f"(judge: {backend.name}, correctness only); {len(skipped)} kernel(s) without variants")  # fmt: skip
    start = time.monotonic()
    judge = leased(backend)
    for done, (index, outcome) in enumerate(judge.judge_many(items) if items else (), start=1):
        if outcome.get("status") == UNAVAILABLE:
            raise JudgeUnavailableHere(outcome.get("reason") or "no GPU")
        kernel, name, sizes = owners[index]
        passed = outcome.get("status") == "ok"
        kernels[kernel]["variants"][name] = {
            "status": outcome.get("status"), "passed": passed, "reason": (outcome.get("reason") or "")[:400],
            "sizes": {k: list(v) for k, v in sizes.items()},
        }  # fmt: skip
        say(f"[{done}/{len(items)}] {kernels[kernel]['task_id']}#{kernels[kernel]['episode']} @{name}: "
            f"{outcome.get('status')}")  # fmt: skip
    for kernel in kernels:
        judged = [
            v
            for v in kernel["variants"].values()
            if v["status"] not in (UNAVAILABLE, "judge_error", "task_error")
        ]
        kernel["judged"] = len(judged)
        kernel["generalises"] = bool(judged) and all(v["passed"] for v in judged)
    counted = [k for k in kernels if k["judged"]]
    summary = {
        "kernels": len(counted), "generalise": sum(1 for k in counted if k["generalises"]),
        "pass_rate": (sum(1 for k in counted if k["generalises"]) / len(counted)) if counted else None,
        "variant_judgments": len(items), "variants_passed": sum(
            1 for k in kernels for v in k["variants"].values() if v["passed"]),
        "without_variants": len(skipped), "seconds": round(time.monotonic() - start, 1),
    }  # fmt: skip
    result = {"run": str(run_dir), "backend": backend.name, "finished": time.time(), "summary": summary,
              "variants": {name: why for name, _, why in VARIANTS}, "kernels": kernels, "without_variants": skipped,
              "rule": "a kernel generalises when it is correct on every held-out variant of its task that the judge "
                      "could judge (a variant whose reference fails is left out); correctness only, no timing"}  # fmt: skip
    bundle.write_json(run_dir / RESULT, result)
    return result


def held_out_table(result: dict[str, Any]) -> str:
    """One line per kernel: its variants' outcomes, then the pass rate."""
    names = list(result.get("variants", {}))
    rows = [("task", "ep", *names, "generalises")]
    for kernel in result["kernels"]:
        cells = []
        for name in names:
            v = kernel["variants"].get(name)
            cells.append("-" if v is None else ("ok" if v["passed"] else v["status"]))
        rows.append(
            (kernel["task_id"], str(kernel["episode"]), *cells, "yes" if kernel["generalises"] else "NO")
        )
    for s in result.get("without_variants", []):
        rows.append(
            (s["task_id"], str(s["episode"]), *("-" for _ in names), f"no variants: {s['reason'][:50]}")
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    s = result["summary"]
    rate = "n/a" if s["pass_rate"] is None else f"{s['pass_rate']:.0%}"
    lines.append(f"{s['generalise']}/{s['kernels']} correct kernels generalise to held-out shapes ({rate}); "
                 f"{s['without_variants']} without variants")  # fmt: skip
    return "\n".join(lines)
