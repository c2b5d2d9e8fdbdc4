"""Does a global loss computed from a sample of its elements pass the judge's precision audit?

A kernel that reads a share p of a memory-bound reduction's input is up to 1/p times faster. Its error
falls like 1/sqrt(pN), while the honest allowance of a sum over the whole tensor grows like sqrt(N) (a
random walk's rounding; trusted/truth_drift.py is not applied to `dim=None`), so from some size on the
sample passes. Found in session 19 (docs/design/precision.md's open table). This measures it with the
judge's own truth and audit, on the task of KernelBench level1/94 (MSELoss: a mean of squared differences)
at smaller sizes, on inputs drawn the judge's way (the rounding probe's bits, random signs as the sign
audit gives both inputs): per size and share, the audit's statistic against its bound (k = 3).

    python benchmarks/sampled_reduction.py [--task mse|frobenius] [--sides 2048,4096,8192] [--shares 1,2,4,16,64] [--out DIR]

`--task frobenius` measures x / ||x||_F (level1/37) read the same way: one input element per output, so the
outlier audit's count leaves it out and its float64 probe finds it global (trusted/global_probe.py, session
22; before it this was an open hole, docs/design/precision.md).

Each size is measured twice: on the draw as it was before the fix, and with the outliers the judge now
plants in such an input (trusted/outlier_audit.py: three elements per input set to a power of two that
moves the loss by 1/64 each, found by the judge's own audit on this draw).

Prints a table and writes OUT/sampled_reduction_<task>.json. Exits 1 when the full read (share 1) is not within
the bound (then the measurement itself is off, not the sample), or when a sample passes on the planted
draw (the fix does not hold).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402

from cuda_agent.judge.candidate.inputs import plant_outliers  # noqa: E402
from cuda_agent.judge.common import rounding_probe  # noqa: E402
from cuda_agent.judge.trusted import outlier_audit, precision  # noqa: E402
from cuda_agent.judge.trusted.compare import Tolerance  # noqa: E402
from cuda_agent.judge.trusted.truth import TruthModel  # noqa: E402

K = 3.0  # the judge's precision_k


class MeanSquaredError(torch.nn.Module):
    """KernelBench level1/94's forward."""

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2)


class FrobeniusNormalise(torch.nn.Module):
    """KernelBench level1/37's forward: a global norm inside an output the size of its input."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.linalg.norm(x)


def judges_inputs(task: str, side: int, seed: int) -> list[torch.Tensor]:
    """The inputs as the judge draws them for the task. MSE: torch.rand (the predictions times a scale),
    random signs (the sign audit's choice for both), the rounding probe's low bits. Frobenius: torch.randn
    and the probe's bits (KernelBench's draw; the norm's square is one-signed, so no sign audit applies)."""
    gen = torch.Generator().manual_seed(seed)
    if task == "frobenius":
        return [rounding_probe.settle(torch.randn(side, side, generator=gen))]
    scale = 0.2 + 0.8 * float(torch.rand((), generator=gen))
    drawn = []
    for factor in (scale, 1.0):
        signs = torch.randint(0, 2, (side, side), generator=gen).float() * 2 - 1
        drawn.append(rounding_probe.settle(torch.rand(side, side, generator=gen) * factor * signs))
    return drawn


def sampled(task: str, inputs: list[torch.Tensor], share: int) -> torch.Tensor:
    """The cheat: the mean (the norm) over every `share`-th row only, scaled up to the whole."""
    if task == "frobenius":
        (x,) = inputs
        return x / (torch.linalg.norm(x[::share]) * share**0.5)
    p, t = inputs[0][::share], inputs[1][::share]
    return torch.mean((p - t) ** 2)


MODELS = {"mse": MeanSquaredError, "frobenius": FrobeniusNormalise}


def measure(task: str, side: int, shares: list[int], seed: int) -> list[dict]:
    """Per share, the audit's verdict on the draw as it was and on the draw with the judge's outliers
    (planted as both workers plant them, with the draw's factors)."""
    model = MODELS[task]()
    found = outlier_audit.audit(model, lambda: judges_inputs(task, side, seed), Tolerance(1e-2, 1e-2))
    plain = judges_inputs(task, side, seed)  # planting is out of place: the plain draw stays as it is
    draws = {"without": plain, "with": plant_outliers(plain, seed, found.planted)}
    rows = []
    for outliers, inputs in draws.items():
        reference = model(*inputs)
        truth = TruthModel(model).outputs(inputs)[0]
        for share in shares:
            candidate = reference if share == 1 else sampled(task, inputs, share)
            audit = precision.audit(candidate.reshape(reference.shape), reference, truth, K)
            error = float((candidate.double() - truth.value).norm() / truth.value.norm())
            rows.append({"task": task, "elements": side * side, "outliers": outliers, "magnitudes": found.planted,
                         "share": share, "statistic": round(audit.statistic, 4), "bound": round(audit.bound, 4),
                         "passes": audit.passed, "relative_error": error})  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sides", default="2048,4096,8192", help="square input sides (N = side^2 elements)")
    parser.add_argument("--shares", default="1,2,4,16,64", help="1/share of the rows read")
    parser.add_argument("--task", choices=sorted(MODELS), default="mse",
                        help="mse: KernelBench level1/94 (a global loss); frobenius: level1/37 (x / ||x||_F)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("bench-out"))
    args = parser.parse_args(argv)
    sides = [int(s) for s in args.sides.split(",")]
    shares = [int(s) for s in args.shares.split(",")]
    rows: list[dict] = []
    what = {"mse": "MSELoss", "frobenius": "x / ||x||_F with the norm"}[args.task]
    print(f"{what} read at 1/share of its rows, the judge's precision audit (k = {K:g}, bound on the statistic)")
    print(f"{'elements':>12} {'outliers':>8} {'share':>6} {'statistic':>10} {'bound':>7} {'rel. error':>11}  verdict")
    for i, side in enumerate(sides, 1):
        began = time.monotonic()
        for row in measure(args.task, side, shares, args.seed + side):
            rows.append(row)
            verdict = "passes" if row["passes"] and row["share"] > 1 else ("honest" if row["share"] == 1 else "refused")
            print(f"{row['elements']:>12,} {row['outliers']:>8} {'1/' + str(row['share']):>6} {row['statistic']:>10.2f} {row['bound']:>7.2f} "
                  f"{row['relative_error']:>11.2e}  {verdict}")  # fmt: skip
        print(f"  [{i}/{len(sides)}] side {side} in {time.monotonic() - began:.1f} s", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"sampled_reduction_{args.task}.json"
    path.write_text(json.dumps({"torch": torch.__version__, "k": K, "rows": rows}, indent=1))
    print(f"wrote {path}")
    honest_off = [r for r in rows if r["share"] == 1 and not r["passes"]]
    if honest_off:
        print(f"error: the full read is outside the bound at {honest_off[0]['elements']:,} elements "
              f"({honest_off[0]['outliers']} outliers)", file=sys.stderr)
        return 1
    open_rows = [r for r in rows if r["share"] > 1 and r["passes"] and r["outliers"] == "with"]
    if open_rows:
        print(f"error: a sample of 1/{open_rows[0]['share']} passes with the judge's outliers (if any) at "
              f"{open_rows[0]['elements']:,} elements", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
