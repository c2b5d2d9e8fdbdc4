"""The weight pair (src/cuda_agent/judge/trusted/response_probe.py, reference_response.py): false alarms,
weights stored in fewer bits caught, and what the second point costs against one forward of the reference.

Every case of benchmarks/precision_variants.py with fp32 parameters is run as the reference worker runs it:
its parameters at a generic point (the base, never handed over), a secret weighting of the outputs, each
parameter's direction (the gradient's balanced sign), the loaded point (bits 0-5 moved up along it) and the
second point (moved down). Each variant computes at both points; the float64 truths come from the reference
at both. Besides the catalogue's own variants, every case gets the reference's own forward with its
parameters rounded to 17, 16 and 15 mantissa bits (a packed copy made at load). A row reports the
response's alignment t and missing share, and the precision audit's verdict at the loaded point (where the
moved low bits make a rounding err along the secret direction). Honest rows must pass both.

    python benchmarks/weight_pair.py [--out DIR] [--scale cpu|gpu] [--seeds N]

Prints a table and writes OUT/weight_pair.json; exits 1 on any false alarm.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import precision_audit as pa  # noqa: E402
import precision_variants as pv  # noqa: E402
import torch  # noqa: E402

from cuda_agent.judge.common import rounding_probe  # noqa: E402
from cuda_agent.judge.config import JudgeConfig  # noqa: E402
from cuda_agent.judge.trusted import precision, response_probe  # noqa: E402
from cuda_agent.judge.trusted.truth import TruthModel  # noqa: E402
from cuda_agent.task import flatten_tensors  # noqa: E402

Run = Callable[[torch.nn.Module, list[torch.Tensor]], torch.Tensor]


def _set(parameters: dict[str, torch.Tensor], values: dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        for name, value in values.items():
            parameters[name].copy_(value)


def packed(bits: int) -> Run:
    """The reference's own forward with every fp32 parameter rounded to `bits` mantissa bits (restored after)."""

    def run(model: torch.nn.Module, inputs: list[torch.Tensor]) -> torch.Tensor:
        live = response_probe.weighed_parameters(model)
        kept = {name: p.detach().clone() for name, p in live.items()}
        _set(live, {name: pv.keep_bits(p, bits) for name, p in kept.items()})
        try:
            with torch.no_grad():
                return flatten_tensors(model(*[x.clone() for x in inputs]))[0]
        finally:
            _set(live, kept)

    return run


def run_case(case: pv.Case, k: float, device: str, seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every variant of `case` at both points of one weight pair; returns the rows and the pair's cost."""
    torch.manual_seed(seed)
    model, base = case.make(device)
    live = response_probe.weighed_parameters(model)
    if not live:
        return [], {"case": case.name, "why": "no fp32 or float64 parameter"}
    _set(live, {name: rounding_probe.settle(p.detach().clone()) for name, p in live.items()})
    with torch.no_grad():
        model(*base)  # warm
    began = time.perf_counter()
    with torch.no_grad():
        model(*[x.clone() for x in base])
    forward_s = time.perf_counter() - began
    began = time.perf_counter()
    generator = torch.Generator(device=device).manual_seed(1000 + seed)
    moves = dict(live)
    try:
        _, weights = response_probe.aim(model, base, generator, flatten_tensors, moves)
    except ValueError as exc:
        return [], {"case": case.name, "why": str(exc)}
    if not moves:
        return [], {"case": case.name, "why": "the outputs depend on no fp32 parameter"}
    points = [response_probe.weight_moves(moves, live, up, generator) for up in (True, False)]
    truths, references = [], []
    for point in points:
        _set(live, point)
        truths.append(TruthModel(model).outputs(base))
        with torch.no_grad():
            references.append(flatten_tensors(model(*[x.clone() for x in base]))[0])
    pair_s = time.perf_counter() - began
    cost = {"case": case.name, "forward_ms": round(forward_s * 1e3, 3), "pair_ms": round(pair_s * 1e3, 3),
            "pair_over_forward": round(pair_s / max(forward_s, 1e-9), 1)}  # fmt: skip
    if any(t is None or t[0] is None for t in truths):
        return [], {**cost, "why": "no truth"}
    variants = [(v.name, v.honest, v.run) for v in case.variants]
    variants += [(f"parameters packed to {b} bits", False, packed(b)) for b in (17, 16, 15)]
    rows = []
    for name, honest, run in variants:
        outputs = []
        for point in points:
            _set(live, point)
            with torch.no_grad():
                outputs.append(run(model, [x.clone() for x in base]).to(references[0].dtype))
        found = response_probe.respond(outputs[0], outputs[1], truths[0][0].value, truths[1][0].value, weights[0], 0)
        audited = precision.audit(outputs[0], references[0], truths[0][0], k)
        rows.append({
            "case": case.name, "dtype": case.dtype, "variant": name, "honest": honest, "seed": seed,
            "alignment": round(found.alignment, 3), "missing": round(found.missing, 4),
            "response_passed": found.passed, "audit_statistic": round(audited.statistic, 3),
            "audit_bound": round(audited.bound, 3), "audit_passed": audited.passed,
        })  # fmt: skip
    return rows, cost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("weight-pair"))
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
    with pa.math_flags():
        for case in pv.cases(scale):
            print(f"... {case.name}", file=sys.stderr, flush=True)
            for seed in range(args.seeds):
                made, cost = run_case(case, k, device, seed)
                rows += made
                if seed == 0:
                    costs.append(cost)
    print(f"\nweight pair ({device}, {scale} sizes, {args.seeds} pairs per case): fails when |alignment| > "
          f"{response_probe.ALIGNMENT:g} and |missing| > {response_probe.MISSING:.0%}; audit at the loaded point\n")  # fmt: skip
    print(f"{'case':36s} {'variant':40s} {'kind':7s} {'max |t|':>8s} {'missing':>8s} {'audit':>7s} {'pair':>5s} "
          f"{'audit':>6s}  result")  # fmt: skip
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["case"], r["variant"]), []).append(r)
    false_alarms, passed_lowered, seen_only_by_pair = [], [], []
    for (case, variant), group in groups.items():
        honest = group[0]["honest"]
        pair = all(r["response_passed"] for r in group)
        audit = all(r["audit_passed"] for r in group)
        worst = max(group, key=lambda r: abs(r["alignment"]))
        statistic = max(r["audit_statistic"] / max(r["audit_bound"], 1e-30) for r in group)
        if honest and not (pair and audit):
            false_alarms.append(f"{case}: {variant}")
        if not honest and pair and audit:
            passed_lowered.append(f"{case}: {variant}")
        if not honest and audit and not pair:
            seen_only_by_pair.append(f"{case}: {variant}")
        result = ("ok" if pair and audit else "FALSE ALARM") if honest else ("caught" if not (pair and audit) else "passed")
        print(f"{case[:36]:36s} {variant[:40]:40s} {'honest' if honest else 'lowered':7s} {abs(worst['alignment']):8.2f} "
              f"{worst['missing']:8.3f} {statistic:7.2f} {'pass' if pair else 'FAIL':>5s} {'pass' if audit else 'FAIL':>6s}"
              f"  {result}")  # fmt: skip
    print(f"\n{'case':36s} {'forward ms':>11s} {'pair ms':>9s} {'x':>7s}")
    for c in costs:
        print(f"{c['case'][:36]:36s} {c.get('forward_ms', 0):11.3f} {c.get('pair_ms', 0):9.3f} "
              f"{c.get('pair_over_forward', float('nan')):7.1f}  {c.get('why', '')}")  # fmt: skip
    honest_t = [abs(r["alignment"]) for r in rows if r["honest"]]
    summary = {
        "device": device, "scale": scale, "seeds": args.seeds, "alignment_limit": response_probe.ALIGNMENT,
        "missing_limit": response_probe.MISSING, "honest_rows": len(honest_t),
        "largest_honest_alignment": max(honest_t, default=0.0), "false_alarms": false_alarms,
        "lowered_passed": passed_lowered, "seen_only_by_the_pair": seen_only_by_pair,
        "seconds": round(time.time() - started, 1),
    }  # fmt: skip
    print(f"\nhonest rows {len(honest_t)}, largest |t| {summary['largest_honest_alignment']:.2f}; false alarms "
          f"{len(false_alarms)}; lowered passing both {len(passed_lowered)}; seen only by the pair "
          f"{len(seen_only_by_pair)}")  # fmt: skip
    (args.out / "weight_pair.json").write_text(json.dumps({"summary": summary, "rows": rows, "costs": costs}, indent=1))
    print(f"wrote {args.out / 'weight_pair.json'}")
    return 1 if false_alarms else 0


if __name__ == "__main__":
    sys.exit(main())
