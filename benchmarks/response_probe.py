"""The low-bit response check (src/cuda_agent/judge/trusted/response_probe.py): false alarms, lowered
precision caught, and what its pair of input sets costs against one forward of the reference.

Every case of benchmarks/precision_variants.py (and, on a GPU, the real cuBLAS/cuDNN kernels of
benchmarks/precision_audit.py) is run as the reference worker runs it: a base set, its pair moved in the
low bits along the reference's gradient of a secret output weighting, the float64 truth on both, and each
variant's outputs on both. A row reports the alignment t (honest: a standard normal), the share of the
exact change the variant missed, and the check's verdict beside the precision audit's on the first set of
the pair. Honest rows must pass both; a lowered row should fail at least one (`combined`), and the rows
the audit alone passes (bias measured and removed) are what the check is for.

    python benchmarks/response_probe.py [--out DIR] [--scale cpu|gpu] [--seeds N]

Prints a table and writes OUT/response_probe.json; exits 1 on any false alarm.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import precision_audit as pa  # noqa: E402
import precision_variants as pv  # noqa: E402
import torch  # noqa: E402

from cuda_agent.judge.config import JudgeConfig  # noqa: E402
from cuda_agent.judge.trusted import precision, response_probe  # noqa: E402
from cuda_agent.judge.trusted.truth import TruthModel  # noqa: E402
from cuda_agent.task import flatten_tensors  # noqa: E402


def _synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def run_case(case: pv.Case, k: float, device: str, seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every variant of `case` on one pair; returns the rows and the pair's cost."""
    model, base = case.make(device)
    generator = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        model(*base)  # warm
    _synchronize(device)
    began = time.perf_counter()
    with torch.no_grad():
        model(*[x.clone() for x in base])
    _synchronize(device)
    forward_s = time.perf_counter() - began
    began = time.perf_counter()
    try:
        directions, weights = response_probe.aim(model, base, generator, flatten_tensors)
    except ValueError as exc:
        return [], {"case": case.name, "why": str(exc)}
    pair = [[response_probe.moved(x, d, up, generator) if response_probe.probed(x) else x
             for x, d in zip(base, directions, strict=True)] for up in (True, False)]  # fmt: skip
    truth_model = TruthModel(model)
    truths = [truth_model.outputs(inputs) for inputs in pair]
    _synchronize(device)
    pair_s = time.perf_counter() - began
    cost = {"case": case.name, "forward_ms": round(forward_s * 1e3, 3), "pair_ms": round(pair_s * 1e3, 3),
            "pair_over_forward": round(pair_s / max(forward_s, 1e-9), 1)}  # fmt: skip
    if any(t is None or t[0] is None for t in truths):
        return [], {**cost, "why": f"no truth ({truth_model.problem})"}
    with torch.no_grad():
        reference = flatten_tensors(model(*[x.clone() for x in pair[0]]))[0]
    rows = []
    for v in case.variants:
        with torch.no_grad():
            up, down = (v.run(model, inputs).to(reference.dtype) for inputs in pair)
        found = response_probe.respond(up, down, truths[0][0].value, truths[1][0].value, weights[0], 0)
        audited = precision.audit(up, reference, truths[0][0], k)
        rows.append({
            "case": case.name, "dtype": case.dtype, "variant": v.name, "honest": v.honest, "seed": seed,
            "alignment": round(found.alignment, 3), "missing": round(found.missing, 4),
            "response_passed": found.passed, "audit_statistic": round(audited.statistic, 3),
            "audit_bound": round(audited.bound, 3), "audit_passed": audited.passed,
        })  # fmt: skip
    return rows, cost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("response-probe"))
    parser.add_argument("--scale", choices=("cpu", "gpu"), default=None, help="sizes (default: gpu on a GPU)")
    parser.add_argument("--seeds", type=int, default=3, help="pairs per case (default 3)")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    scale = args.scale or ("gpu" if device == "cuda" else "cpu")
    k = JudgeConfig().precision_k
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    rows: list[dict[str, Any]] = []
    costs: list[dict[str, Any]] = []
    catalogue = pv.cases(scale) + (pa.real_cases() if device == "cuda" else [])
    with pa.math_flags():
        for case in catalogue:
            print(f"... {case.name}", file=sys.stderr, flush=True)
            for seed in range(args.seeds):
                made, cost = run_case(case, k, device, seed)
                rows += made
                if seed == 0:
                    costs.append(cost)
    print(f"\nlow-bit response check ({device}, {scale} sizes, {args.seeds} pairs per case): fails when "
          f"|alignment| > {response_probe.ALIGNMENT:g} and |missing| > {response_probe.MISSING:.0%}\n")  # fmt: skip
    print(f"{'case':44s} {'variant':44s} {'kind':7s} {'max |t|':>8s} {'missing':>8s} {'check':>6s} {'audit':>6s}  result")
    by_variant: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        by_variant.setdefault((r["case"], r["variant"]), []).append(r)
    false_alarms, passed_lowered, seen_only_by_check = [], [], []
    for (case, variant), group in by_variant.items():
        honest = group[0]["honest"]
        check = all(r["response_passed"] for r in group)
        audit = all(r["audit_passed"] for r in group)
        worst = max(group, key=lambda r: abs(r["alignment"]))
        if honest and not check:
            false_alarms.append(f"{case}: {variant}")
        if not honest and check and audit:
            passed_lowered.append(f"{case}: {variant}")
        if not honest and audit and not check:
            seen_only_by_check.append(f"{case}: {variant}")
        result = ("ok" if check else "FALSE ALARM") if honest else ("caught" if not (check and audit) else "passed")
        print(f"{case[:44]:44s} {variant[:44]:44s} {'honest' if honest else 'lowered':7s} "
              f"{abs(worst['alignment']):8.2f} {worst['missing']:8.3f} {'pass' if check else 'FAIL':>6s} "
              f"{'pass' if audit else 'FAIL':>6s}  {result}")  # fmt: skip
    print(f"\n{'case':44s} {'forward ms':>11s} {'pair ms':>9s} {'x':>7s}")
    for c in costs:
        print(f"{c['case'][:44]:44s} {c.get('forward_ms', 0):11.3f} {c.get('pair_ms', 0):9.3f} "
              f"{c.get('pair_over_forward', float('nan')):7.1f}  {c.get('why', '')}")  # fmt: skip
    honest_t = [abs(r["alignment"]) for r in rows if r["honest"]]
    summary = {
        "device": device, "scale": scale, "seeds": args.seeds, "alignment_limit": response_probe.ALIGNMENT,
        "missing_limit": response_probe.MISSING, "honest_rows": len(honest_t),
        "max_honest_alignment": max(honest_t, default=None),
        "false_alarms": false_alarms, "lowered_passing_both": passed_lowered,
        "lowered_seen_only_by_this_check": seen_only_by_check, "costs": costs,
        "seconds": round(time.time() - started, 1),
    }  # fmt: skip
    (args.out / "response_probe.json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    print(f"\nhonest rows {len(honest_t)}, max |alignment| {summary['max_honest_alignment']}, false alarms "
          f"{len(false_alarms)}; lowered rows passing both checks: {len(passed_lowered)}; seen only by this check: "
          f"{len(seen_only_by_check)} -> {args.out / 'response_probe.json'}")  # fmt: skip
    for line in passed_lowered:
        print(f"  passes both: {line}")
    return 1 if false_alarms else 0


if __name__ == "__main__":
    raise SystemExit(main())
