"""Measure the precision audit's K: honest kernels' error ratios against the reference's own error.

The precision audit (src/cuda_agent/judge/precision.py) rejects a candidate whose relative error against
a float64 evaluation of the reference exceeds K times the reference's own. K must sit well above what
honest kernels show (other summation orders, fast exp, their own reductions) and well below what
downgrades show (TF32, fp16 or bf16 operands). This script prints both sides in one table:

- honest cases (tests/adversarial/00_honest_*, the honest examples/) judged on the GPU by the real
  judge: the largest ratio over their verification sets and checked timed calls
  (`checks.precision_error_ratio`), which must stay below K;
- the same tasks' references evaluated with downgraded arithmetic (operands rounded to fp16 / bf16, and
  TF32 matmuls and convolutions where a GPU is present), the ratios a cheat of that kind would show,
  which must stay above K.

    python benchmarks/precision_audit.py [--out DIR] [--reference-only] [--verdicts FILE] [case folders...]

`--reference-only` skips the judge (no GPU needed): only the downgrade side, on CPU or GPU.
`--verdicts FILE` takes the honest side from verdicts already made (a JSON object case name -> verdict,
as tests/gpu/test_judge_verify_gpu.py writes with CUDA_AGENT_RESULTS) instead of judging again.
Prints a table and writes OUT/precision_audit.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402

from cuda_agent.judge.candidate.inputs import draw_inputs  # noqa: E402
from cuda_agent.judge.config import JudgeConfig  # noqa: E402
from cuda_agent.judge.trusted import precision  # noqa: E402
from cuda_agent.judge.trusted.audit import make_parameters_matter, vary_constant_state  # noqa: E402
from cuda_agent.judge.trusted.compare import Tolerance  # noqa: E402
from cuda_agent.task import Task, build_model, flatten_tensors, import_task_module  # noqa: E402


def honest_cases() -> list[Path]:
    """Every honest case: tests/adversarial/ (00_honest_* and the honest edge cases) and examples/."""
    cases = []
    for suite in (ROOT / "tests" / "adversarial", ROOT / "examples"):
        for expected in sorted(suite.glob("*/expected.json")):
            if json.loads(expected.read_text()).get("kind") == "honest":
                cases.append(expected.parent)
    return cases


def judge_ratios(cases: list[Path], out: Path) -> dict[str, dict[str, Any]]:
    """Judge the cases with the real judge (one process); their verdicts' precision ratios."""
    command = [sys.executable, "-m", "cuda_agent.cli", "judge", "--json", *map(str, cases)]
    env = {"PYTHONPATH": str(ROOT / "src"), **dict(__import__("os").environ)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    found: dict[str, dict[str, Any]] = {}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    (out / "verdicts.jsonl").write_text("\n".join(lines) + "\n")
    for case, line in zip(cases, lines, strict=False):
        verdict = json.loads(line)
        found[case.name] = {
            "status": verdict["status"], "reward": verdict["reward"],
            "ratio": verdict.get("checks", {}).get("precision_error_ratio"),
            "reason": verdict["reason"][:160],
        }  # fmt: skip
    if done.returncode not in (0, 1):
        print(done.stderr[-2000:], file=sys.stderr)
    return found


@contextlib.contextmanager
def tf32(enabled: bool) -> Iterator[None]:
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _rounded(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return value.to(dtype).float()
    return value


def downgrade_ratios(case: Path, device: str, seed: int = 1) -> dict[str, float | str]:
    """The task's reference, with cheaper arithmetic, against float64: ratios to its own error."""
    source = (case / "model.py").read_text()
    task = Task(name=case.name, source=source, path=case / "model.py")
    module = import_task_module(task, f"precision_{case.name}")
    torch.manual_seed(seed)
    model, _ = build_model(module, task.name)
    vary_constant_state(model)
    model = model.to(device).eval()
    inputs = draw_inputs(module, seed + 1, device=device)
    make_parameters_matter(model, inputs, Tolerance(), budget_s=2.0)
    exact_model = precision.Exact(model)
    with torch.no_grad(), tf32(False):
        ref = flatten_tensors(model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
        exact = exact_model.outputs(inputs)
    if exact is None or exact[0] is None or not precision.auditable(ref[0]):
        return {"note": exact_model.problem or "no float64 output"}
    result: dict[str, float | str] = {
        "reference_error": precision.relative_error(ref[0], exact[0]),
    }
    variants: dict[str, Any] = {}
    for name, dtype in (("fp16 operands", torch.float16), ("bf16 operands", torch.bfloat16)):
        rounded = [_rounded(x, dtype) for x in inputs]
        cheap = __import__("copy").deepcopy(model)
        with torch.no_grad():
            for p in [*cheap.parameters(), *cheap.buffers()]:
                if p.dtype == torch.float32:
                    p.copy_(p.to(dtype).float())
            variants[name] = flatten_tensors(cheap(*rounded))[0]
    if device == "cuda":
        with torch.no_grad(), tf32(True):
            variants["tf32"] = flatten_tensors(model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))[0]
    for name, out in variants.items():
        result[name] = precision.errors(out, ref[0], exact[0]).ratio
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=Path("precision-audit"))
    parser.add_argument("--reference-only", action="store_true")
    parser.add_argument("--verdicts", type=Path, help="verdicts JSON (case name -> verdict) to read ratios from")
    args = parser.parse_args()
    cases = [c.resolve() for c in args.cases] or honest_cases()
    args.out.mkdir(parents=True, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    k = JudgeConfig().precision_k
    start = time.time()
    if args.verdicts:
        made = json.loads(args.verdicts.read_text())
        judged = {
            name: {"status": v["status"], "reward": v["reward"],
                   "ratio": v.get("checks", {}).get("precision_error_ratio"), "reason": v["reason"][:160]}
            for name, v in made.items()
        }  # fmt: skip
    elif args.reference_only or device != "cuda":
        judged = {}
    else:
        judged = judge_ratios(cases, args.out)
    rows = []
    for case in cases:
        print(f"... {case.name}", file=sys.stderr, flush=True)
        try:
            down = downgrade_ratios(case, device)
        except Exception as exc:  # a task this script cannot emulate: say so, keep going
            down = {"note": f"{type(exc).__name__}: {str(exc)[:80]}"}
        rows.append({"case": case.name, "judge": judged.get(case.name), **down})
    header = f"{'case':34s} {'judge':>10s} {'honest ratio':>12s} {'ref err':>9s} {'fp16':>9s} {'bf16':>9s} {'tf32':>9s}"
    print(f"\nprecision audit, K = {k:g} ({device}; honest ratio must be < K, downgrades > K)\n{header}")

    def cell(value: Any) -> str:
        return f"{value:9.3g}" if isinstance(value, float) else f"{'-':>9s}"

    for row in rows:
        verdict = row["judge"] or {}
        status = f"{verdict.get('status', '-')}/{verdict.get('reward', '')}" if verdict else "-"
        ratio = verdict.get("ratio")
        print(f"{row['case']:34s} {status:>10s} {cell(ratio):>12s} {cell(row.get('reference_error'))} "
              f"{cell(row.get('fp16 operands'))} {cell(row.get('bf16 operands'))} {cell(row.get('tf32'))}"
              + (f"  {row['note']}" if "note" in row else ""))  # fmt: skip
    honest = [r["judge"]["ratio"] for r in rows if r["judge"] and isinstance(r["judge"].get("ratio"), float)]
    cheats = [v for r in rows for key, v in r.items() if key in ("fp16 operands", "bf16 operands", "tf32")
              and isinstance(v, float)]  # fmt: skip
    summary = {
        "k": k, "device": device, "max_honest_ratio": max(honest, default=None),
        "min_downgrade_ratio": min(cheats, default=None), "rows": rows, "seconds": round(time.time() - start, 1),
    }  # fmt: skip
    print(f"\nlargest honest ratio {summary['max_honest_ratio']}, smallest downgrade ratio "
          f"{summary['min_downgrade_ratio']}, K = {k:g}")  # fmt: skip
    (args.out / "precision_audit.json").write_text(json.dumps(summary, indent=2, default=str))
    ok = all(h < k for h in honest)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
