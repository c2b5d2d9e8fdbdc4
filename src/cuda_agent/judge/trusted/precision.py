"""Trusted side: the precision audit, each output against its truth and the error an honest kernel can have.

The tolerance (atol = rtol = 1e-2) is wide enough for TF32 or bf16 inside an fp32 GEMM, fp16 tensor-core
kernels in an fp32 task, weights cut to fewer mantissa bits at load, or a half-precision accumulator: all
pass `allclose` while computing something cheaper than the task asks. The audit measures how far each
output element is from the exact value (truth.py: the reference model run with every op promoted to
float64), in units of the error an honest computation of that element in the task's precision can have
(truth_ops.py and the rule modules: propagated op by op, from the dtypes and the lengths of the
reductions). So the bound follows from what an fp32 (fp16, bf16) computation of *this* output can be off
by, not from the reference's own error: a reference that happens to be very accurate no longer leaves 64
times its error free, and one whose error is large (a long reduction) no longer looks like a downgrade.

The statistic is the root mean square of z = |candidate - truth| / allowance over the output's elements,
after leaving out elements whose truth is unknowable (a decision within the error, see truth_ops.py) and
the largest 1% (`TRIM`): a few elements that flip at a discontinuity (an argmax, a threshold, a rounding)
beyond the truth's near-tie marking, or sit in the heavy tail of an honest algorithm's error (Winograd
F(4x4, 3x3) on one input channel: z up to 21), cannot fail an honest kernel alone, while lowered precision
moves every element. Where the reference decided nothing on its way (`Truth.decided`: no comparison,
index, rounding to an integer, pick or op without a rule), no element can flip, and an element beyond
`TRIM_CEILING` allowances is not an honest tail either: it stays in. The unbounded trim hid a kernel that
ignored an input moving 0.1% of a smooth output's elements at z ~ 1e4 (a white-box probe, 2026-12-06). Elements are judged by
their own allowance, so a downgrade cannot hide in the small elements of an output with large ones, and
cancellation (`x - mean`, `a @ b - c`) is bounded by the magnitudes of the terms, not of the result.

The candidate passes while its statistic is at most `bound`: k (`JudgeConfig.precision_k`) widened for
small outputs (a few elements are a noisy estimate), and never below `REFERENCE_FACTOR` times the
reference's own statistic (if the error model were wrong for an op the reference uses, the reference would
show it, and honest kernels keep that margin). Calibrated on emulated honest orderings and downgrades
(tests/judge/test_precision_bound.py, benchmarks/precision_audit.py, docs/design/precision.md).
`JudgeConfig.precision_audit = False` restores the tolerance-only rule of the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from cuda_agent.judge.trusted.tracked import ABSOLUTE_FLOOR, roundoff
from cuda_agent.judge.trusted.truth import Truth

# The share of an output's elements (the largest z) the statistic leaves out: flips at discontinuities.
TRIM = 0.01
# Where the reference decided nothing, an element further than this many allowances is not left out: no
# flip can explain it, and honest tails measured reach about 21 (benchmarks/precision_variants.py).
TRIM_CEILING = 256.0
# The bound is never below this many times the reference's own statistic.
REFERENCE_FACTOR = 2.0
# Small outputs: the bound is k * (1 + SMALL_SAMPLE / sqrt(n)).
SMALL_SAMPLE = 2.0


@dataclass(frozen=True)
class Audit:
    """One output's audit. `statistic` and `reference`: the root-mean-square error of the candidate's and
    of the reference's own output, in units of the honest allowance; `bound`: the candidate's limit;
    `elements`: how many elements were audited; `left_out`: unknowable or non-finite ones."""

    statistic: float
    reference: float
    bound: float
    elements: int
    left_out: int

    @property
    def passed(self) -> bool:
        return self.statistic <= self.bound


def allowance(truth: Truth) -> torch.Tensor:
    """Each element's honest error: its propagated standard error, at least the rounding of the exact
    value to the output dtype and the smallest magnitude that dtype keeps (float64)."""
    # In place on one float64 copy, the same operations in the same order as sqrt(s*s + r*r + f*f) (adding
    # is commutative in IEEE arithmetic, so r*r + s*s is s*s + r*r bit for bit): the whole-tensor form held
    # five float64 copies of the output at its peak, this two.
    value = truth.value.to(torch.float64)
    variance = value.abs().mul_(roundoff(truth.dtype))
    variance.mul_(variance)
    if truth.sigma is not None:
        sigma = truth.sigma.to(value.device, torch.float64)
        variance.add_(sigma * sigma)
    floor = ABSOLUTE_FLOOR.get(truth.dtype, 0.0)
    return variance.add_(floor * floor).sqrt_()


def z_scores(out: torch.Tensor, truth: Truth, keep: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """|out - exact| / scale on the kept elements: divided in place before selecting (the same values, one
    float64 copy of the output instead of four), from a copy (`out` may itself be float64)."""
    value = truth.value.to(torch.float64)
    error = out.detach().to(value.device, torch.float64, copy=True).sub_(value).abs_().div_(scale)
    return error.reshape(-1)[keep]


def statistic(z: torch.Tensor, ceiling: float | None = None) -> float:
    """Root mean square of z after leaving out the largest TRIM share, except elements beyond `ceiling`
    (and NaN) where one is given (0 for no elements)."""
    n = z.numel()
    if n == 0:
        return 0.0
    flat = z.flatten()
    drop = int(TRIM * n)
    if drop:
        keep = flat <= trim_threshold(flat, drop)
        if ceiling is not None:
            keep |= ~(flat <= ceiling)
        flat = flat[keep]
    return float(torch.sqrt(torch.mean(flat * flat)))


def trim_threshold(flat: torch.Tensor, drop: int) -> torch.Tensor:
    """The (drop + 1)-th largest value of `flat` (NaN counts as the largest, as in a sort): what
    `torch.kthvalue(flat, n - drop)` gives, found with `topk`. On the GPU kthvalue selects each slice in
    one thread block, so a single slice of 128M elements took ~3 s per audit on an H200 (the spot checks
    of an elementwise task then cost 79 s a judgment); topk's radix selection spreads a large slice over
    many blocks. On the CPU both are partial selections."""
    return torch.topk(flat, drop + 1, largest=True, sorted=True).values[-1]


def audit(candidate: torch.Tensor, reference: torch.Tensor, truth: Truth, k: float) -> Audit:
    value = truth.value.to(torch.float64)
    scale = allowance(truth)
    # Flat, so that selecting with it indexes one dimension: an N-d mask's indices take 8 bytes per element
    # and dimension (a 4-d output's: 32 bytes an element, four times its float64 copy; 56 GiB on a 7 GiB one).
    # The reference's finiteness is read in its own dtype (a float64 copy only for this held one more).
    finite_ref = torch.isfinite(reference.detach()).to(value.device)
    keep = (torch.isfinite(value) & torch.isfinite(scale) & finite_ref).reshape(-1)
    del finite_ref
    n = int(keep.sum())
    left_out = value.numel() - n
    if n == 0:
        return Audit(0.0, 0.0, k, 0, left_out)
    # Elements no honest computation can err on (sigma 0: a ReLU's zeros, a clamp's saturated values) are
    # judged apart from those a computation reaches: mixed in, they diluted the root mean square, and an
    # output 50-98% saturated passed operands rounded to ~16 bits (a review, 2026-12-05).
    moving = _moving(truth, value).reshape(-1)[keep]
    parts = (moving, ~moving)
    counts = [int(part.sum()) for part in parts]

    def statistics(out: torch.Tensor) -> list[float]:  # one output's z-scores held at a time
        z = z_scores(out, truth, keep, scale)
        return [statistic(z[part], ceiling) if count else 0.0 for part, count in zip(parts, counts, strict=True)]

    ceiling = None if truth.decided else TRIM_CEILING
    cands, owns = statistics(candidate), statistics(reference)
    cand, own, n, bound = 0.0, 0.0, 0, k
    for count, c, o in zip(counts, cands, owns, strict=True):
        if count == 0:
            continue
        limit = max(k * (1.0 + SMALL_SAMPLE / math.sqrt(count)), REFERENCE_FACTOR * o)
        if n == 0 or c / limit > cand / bound:
            cand, own, n, bound = c, o, count, limit
    return Audit(cand, own, bound, n, left_out)


def _moving(truth: Truth, value: torch.Tensor) -> torch.Tensor:
    """Where an honest computation's error can reach the element (propagated sigma above 0)."""
    if truth.sigma is None:
        return torch.zeros_like(value, dtype=torch.bool)
    return truth.sigma.to(value.device, torch.float64) > 0


def verdict(found: Audit, label: str) -> str | None:
    """None if the candidate is within its bound, else the reason."""
    if found.passed:
        return None
    return (
        f"precision audit: {label} is {found.statistic:.3g} times further from the exact value (the reference "
        f"evaluated with every op promoted to float64) than an honest computation in the task's precision "
        f"can be (root-mean-square over {found.elements} elements of the error divided by the error that "
        f"rounding in the output's dtype and float32 accumulation over each reduction allow; at most "
        f"{found.bound:.3g}; the reference itself is at {found.reference:.3g}): compute in the task's precision "
        "-- fp32 operands and fp32 accumulation for fp32 tasks (no TF32, no fp16/bf16 operands or weights, no "
        "mantissa bits dropped), fp32 accumulation for fp16/bf16 tasks, float64 throughout where the task computes "
        "in float64 -- and do not change math flags in forward"
    )


def auditable(t: torch.Tensor) -> bool:
    """A floating output with elements, float64 ones included: the truth's error model says how far an
    honest computation of it can be (an fp32 result returned as float64 keeps fp32's allowance, a float64
    computation gets float64's), so fp16 or fp32 arithmetic behind a float64 output is caught too."""
    return t.is_floating_point() and t.numel() > 0
