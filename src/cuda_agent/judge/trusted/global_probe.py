"""Trusted side: is an input *global*, read by every output, though each output is the size of one element?

Why. The outlier audit (outlier_audit.py) qualifies an input by counting: 2^20 or more of its elements per
output element, a global loss. A norm inside an output the size of its input (x / ||x||_F, KernelBench
level1/37) has one input element per output, yet every output depends on all of them through the norm; a
kernel that computes the norm from a quarter of the rows errs by about 1/sqrt(N/4) of it, within what an
honest fp32 sum of N squares may err from about 16M elements on (benchmarks/sampled_reduction.py --task
frobenius). Planting outliers there too makes a sample miss or overcount them by a share that no honest
order comes near, so the precision audit refuses it.

How. Three elements of a copy of the held input set, at positions from a seed, are set to a power of two at
least PROBE_FACTOR N times the input's largest magnitude (N its element count), and the reference's float64
truth (truth.TruthModel: every op promoted, so a model that casts inside forward is probed too) is made on
the copy and on the set as it is. The input is global where at least GLOBAL_SHARE of the floating output
elements moved by SHIFT of their own magnitude (`moved_share`). A global mean or norm moves every output
(x - mean by 3M/N, a normalised output by nearly all of itself); an elementwise op moves three outputs, a
row reduction or row softmax the rows of the three, a matmul or a convolution their rows or neighbourhoods.

Why float64, and why not a probe of the reference itself. The probe was first made in float32 on the
reference (session 21) and withdrawn: cuDNN's convolution algorithms (FFT and Winograd tiles) spread the
rounding of one huge element over the whole image, 2^-24 of it, so a 3x3 convolution looked global, a
magnitude was planted and the reference's own noise at that size became the expected output. In float64
that rounding is 2^-53 of the element: at N = 2^30 and PROBE_FACTOR 64 the spread is about 2^-11 of an input
element's magnitude, far below SHIFT of any output that is not itself near zero. Magnitudes are searched on
the same float64 truth (`outlier_audit`), so a convolution's float32 noise never decides one either.

What it does not reach: a mean over many rows of a bounded per-row term (a cosine similarity loss) moves
by a bounded share whatever one element is; docs/design/precision.md keeps that row open.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from typing import Any

import torch

from cuda_agent.judge.candidate.inputs import mixable, plant_outliers
from cuda_agent.judge.trusted.truth import TruthModel

PROBE_FACTOR = 64  # the probe's elements are >= this times N times the input's largest magnitude
GLOBAL_SHARE = 0.5  # an input is global where at least this share of the output elements moved
SHIFT = 3.0 / 64  # ... each by at least this share of its own magnitude (three outliers, 1/64 each)
# An output element at zero (a ReLU's) is compared at this share of its tensor's root mean square instead,
# so that float64 rounding of a huge element cannot count as a move (it is 2^-11 of an element at most).
ZERO_FLOOR = 2.0**-10


def moved_share(base: list[torch.Tensor], moved: list[torch.Tensor]) -> float:
    """The share of the floating output elements of `base` that moved in `moved` by SHIFT of their own
    magnitude (or of ZERO_FLOOR of their tensor's root mean square); a non-finite output counts as moved."""
    total, count = 0, 0
    for b, m in zip(base, moved, strict=True):
        if not b.is_floating_point() or not b.numel():
            continue
        b64, m64 = b.double(), m.double()
        rms = float(b64.square().mean().sqrt()) if bool(torch.isfinite(b64).all()) else 0.0
        floor = torch.clamp(b64.abs(), min=ZERO_FLOOR * rms)
        shift = (m64 - b64).abs()
        count += int(((shift >= SHIFT * floor) | ~torch.isfinite(shift)).sum())
        total += b.numel()
    return count / total if total else 0.0


def truth_values(truth_model: TruthModel, inputs: list[Any]) -> list[torch.Tensor] | None:
    """The float64 values of the reference's outputs on `inputs`, or None where no truth of the whole batch
    can be made (truth_model.problem says why; a truth on blocks of rows would hide a global dependence)."""
    truth_model.plan(inputs)
    if truth_model.rows is not None:  # planned on blocks: not made at all (a 2^30-element input's copies)
        return None
    truths = truth_model.outputs(inputs)
    if truths is None or any(t is None or t.rows is not None for t in truths):
        return None
    return [t.value for t in truths]


def probe(
    truth_model: TruthModel, held: list[Any], position: int, seed: int | None = None,
) -> tuple[float | None, str]:  # fmt: skip
    """(the moved share, "") for input `position` of the held set, or (None, why it was not probed). The
    held set is not changed: the outliers go into a copy, and the truth reads copies of both."""
    value = held[position]
    if not mixable(value):
        return None, "not a floating tensor"
    largest = float(value.detach().abs().max())
    if not math.isfinite(largest) or largest == 0:
        return None, "it is drawn all zero or not finite"
    magnitude = math.ldexp(1.0, math.frexp(PROBE_FACTOR * value.numel() * largest)[1])
    if magnitude > torch.finfo(value.dtype).max:
        return None, f"{value.dtype} cannot hold the probe's 2^{math.frexp(magnitude)[1] - 1}"
    seed = secrets.randbits(62) if seed is None else seed
    try:
        base = truth_values(truth_model, held)
        if base is None:
            return None, f"no float64 truth of the whole batch ({truth_model.problem or 'made on blocks of rows'})"
        moved = truth_values(truth_model, plant_outliers(held, seed, {position: magnitude}, spread=False))
    except torch.OutOfMemoryError as exc:
        return None, f"out of memory ({str(exc)[:120]})"
    if moved is None:
        return None, f"no float64 truth with the probe's elements ({truth_model.problem})"
    return moved_share(base, moved), ""


def global_outcome(
    truth_model: TruthModel, draw: Callable[[], list[Any]], position: int, seed: int, base: list[torch.Tensor],
) -> Callable[[int], str]:  # fmt: skip
    """The outlier search's test for a global input (outlier_audit._magnitude): 'moves' where outliers of
    2^exponent at `position` move GLOBAL_SHARE of the outputs' float64 truth by SHIFT each, 'short' where
    they do not, or why no truth could be made."""

    def outcome(exponent: int) -> str:
        planted = plant_outliers(draw(), seed, {position: math.ldexp(1.0, exponent)}, spread=False)
        if not bool(torch.isfinite(planted[position]).all()):
            return f"{planted[position].dtype} cannot hold 2^{exponent}"
        moved = truth_values(truth_model, planted)
        if moved is None:
            return f"no float64 truth with elements set to 2^{exponent} ({truth_model.problem})"
        return "moves" if moved_share(base, moved) >= GLOBAL_SHARE else "short"

    return outcome
