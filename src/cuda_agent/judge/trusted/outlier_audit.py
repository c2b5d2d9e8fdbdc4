"""Trusted side: a global loss or norm must read every element, so a few elements of its input are large.

Why. A kernel that reduces N elements to a few outputs from a sample of share p is up to 1/p times faster
and errs by about 1/sqrt(pN) of the result, while an honest fp32 sum over the whole tensor may err by a
random walk's u sqrt(N / 3), which the precision audit must allow. The first falls with N and the second
grows: MSELoss (KernelBench level1/94, 2^30 elements to one) read at 1/64 of its rows passed the audit from
about 64M elements on (benchmarks/sampled_reduction.py; docs/design/precision.md). Only such tasks need
this: where each output reads few inputs (elementwise ops, matmuls, row reductions) the allowance is small
beside what a skipped term costs.

What. On a draw made here, an input position *qualifies* when it is a floating tensor with at least
MIN_ELEMENTS_PER_OUTPUT elements per element of the outputs. For each, the magnitude is the smallest power
of two, from twice the input's root mean square up by at most 2^MAX_EXPONENT, for which setting
OUTLIERS_PER_INPUT elements to it (keeping their signs) moves some output by at least MOVE of its largest
magnitude (or of atol) per element, with the outputs finite up to twice it. Both workers then set that many
elements of it, at positions drawn from a hash of each draw's seed, to that magnitude times a factor from 1
to 1.875 drawn the same way (candidate/inputs.py: plant_outliers), in every draw, verification, warm-up and
timed calls alike, so no call looks different. The factor keeps what the outliers set from being the same
on every draw: a global maximum (or minimum) would otherwise be the magnitude itself, an output a kernel
could return without reading its input. Set rather than
scaled, each outlier carries about the same share. A kernel that skips one misses 1/64 of the output, some
14 times the honest allowance of a sum of 2^30 fp32 terms and beyond the tolerance's rtol of 1/100; one that
scales up a sample of share 1/q counts an odd number of them q times, so it cannot count them right. Where no power of two moves the output (an element the loss clamps away, a bounded
per-row term averaged over many rows), the input is left as it is and the report says so.

Where it does not reach: a reduction inside an output the size of its input (x / ||x||_F: the norm is
global but each output reads one element, so M = 1), and a mean over many rows of a bounded per-row term
(a cosine similarity loss): both are in docs/design/precision.md's open table, with why a probe of the
reference in float32 cannot find the first (a cuDNN convolution spreads a huge element's rounding over its
whole image). SKILL.md states the rule.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from cuda_agent.judge.candidate.inputs import OUTLIERS_PER_INPUT, Outliers, mixable, plant_outliers
from cuda_agent.judge.trusted.compare import Tolerance
from cuda_agent.task import flatten_tensors

MIN_ELEMENTS_PER_OUTPUT = 1 << 20  # input elements per output element from which a sample could pass
MOVE = 1.0 / 64  # each outlier moves an output by this share: many times the sum's honest allowance
MAX_EXPONENT = 64  # 2^64 times the input's scale at most: beyond, the output does not follow the element


@dataclass
class OutlierAudit:
    """The positions given outliers (position -> magnitude) and, for the others that qualified, why not."""

    planted: Outliers = field(default_factory=dict)
    refused: dict[int, str] = field(default_factory=dict)
    per_output: dict[int, int] = field(default_factory=dict)  # qualifying position -> elements per output

    @property
    def outliers(self) -> Outliers | None:
        """What draw_inputs takes: None where nothing is planted."""
        return dict(self.planted) if self.planted else None

    def report(self) -> dict[str, Any]:
        return {"planted": {f"input {k}": f for k, f in sorted(self.planted.items())},
                "refused": {f"input {k}": why for k, why in sorted(self.refused.items())},
                "elements_per_output": {f"input {k}": n for k, n in sorted(self.per_output.items())}}  # fmt: skip


def audit(
    model: torch.nn.Module, draw: Callable[[], list[Any]], tol: Tolerance,
    min_per_output: int | None = None, first: list[Any] | None = None,
) -> OutlierAudit:  # fmt: skip
    """The magnitude of every qualifying input of the task (see the module docstring). `draw` gives an input
    set as the workers draw it so far (transforms and signs applied), a fresh one each call; `first`, a set
    the caller holds already, is used to count the outputs, so a task that cannot qualify costs no second
    input set (a 16 GiB pooling input) and one whose inputs are all below the threshold not even a forward."""
    min_per_output = MIN_ELEMENTS_PER_OUTPUT if min_per_output is None else min_per_output
    found = OutlierAudit()
    inputs = draw() if first is None else first
    if not any(mixable(v) and v.numel() >= min_per_output for v in inputs):
        return found
    with torch.no_grad():
        outputs = max(1, sum(t.numel() for t in flatten_tensors(model(*inputs))))
    for position, value in enumerate(inputs):
        if mixable(value) and value.numel() // outputs >= min_per_output:
            found.per_output[position] = value.numel() // outputs
    del inputs
    if not found.per_output:
        return found
    drawn = draw()  # as the workers draw it: each input's scale, then the outputs the outliers must move
    rms = {p: float(drawn[p].double().square().mean().sqrt()) for p in found.per_output}  # before forward
    with torch.no_grad():
        base = [t.detach().clone() for t in flatten_tensors(model(*drawn))]
    del drawn
    floating = [t for t in base if t.is_floating_point()]
    if not floating:
        found.refused.update({p: "no floating-point output to move" for p in found.per_output})
        return found
    scale = [max(float(t.abs().max()), tol.atol) if t.numel() else tol.atol for t in floating]
    seed = secrets.randbits(62)
    for position in found.per_output:
        magnitude, why = _magnitude(model, draw, position, seed, floating, scale, rms[position])
        if magnitude is None:
            found.refused[position] = why
        else:
            found.planted[position] = magnitude
    return found


def _magnitude(
    model: torch.nn.Module, draw: Callable[[], list[Any]], position: int, seed: int, base: list[torch.Tensor],
    scale: list[float], rms: float,
) -> tuple[float | None, str]:  # fmt: skip
    """The smallest power of two whose outliers at input `position` move an output by MOVE each, and why
    none. Exponents are tried at growing gaps (1, 2, 4, ... above the first), then bisected between the
    last that fell short and the first that did not (or that overflowed): about 10 forwards where a walk
    one exponent at a time took up to 65 (a linear loss at 2^30 elements wants about 2^24 times its scale)."""
    if not rms > 0 or not math.isfinite(rms):
        return None, "it is drawn all zero or not finite"
    first = math.frexp(rms)[1] + 1  # 2^first >= twice the root mean square

    def outcome(exponent: int) -> str:
        """'moves', 'short' or why it cannot be used, for outliers of 2^exponent."""
        planted = plant_outliers(draw(), seed, {position: math.ldexp(1.0, exponent)}, spread=False)
        if not bool(torch.isfinite(planted[position]).all()):
            return f"{planted[position].dtype} cannot hold 2^{exponent}"
        with torch.no_grad():
            moved = [t for t in flatten_tensors(model(*planted)) if t.is_floating_point()]
        del planted
        if len(moved) != len(base) or not all(bool(torch.isfinite(t).all()) for t in moved):
            return f"the outputs are not finite with elements set to 2^{exponent}"
        shift = max((float((m.double() - b.double()).abs().max()) / s if m.numel() else 0.0)
                    for m, b, s in zip(moved, base, scale, strict=True))  # fmt: skip
        return "moves" if shift >= MOVE * OUTLIERS_PER_INPUT else "short"

    short, gap, found, why = first - 1, 1, None, ""
    while found is None and short - first + 1 < MAX_EXPONENT:
        exponent = min(short + gap, first + MAX_EXPONENT)
        result = outcome(exponent)
        if result == "short":
            short, gap = exponent, gap * 2
        else:
            found, why = exponent, result
    if found is None:
        return None, (f"no power of two up to 2^{MAX_EXPONENT} times its root mean square on a few elements "
                      f"moves an output by 1/{round(1 / MOVE)}")  # fmt: skip
    while found - short > 1:  # bisect to the smallest exponent that is not short: it moves, or it overflows
        middle = (short + found) // 2
        result = outcome(middle)
        if result == "short":
            short = middle
        else:
            found, why = middle, result
    if why != "moves":
        return None, why
    # The draws' factors reach 1.875: the outputs must stay finite at twice the magnitude too.
    if (ceiling := outcome(found + 1)) not in ("moves", "short"):
        return None, ceiling
    return math.ldexp(1.0, found), ""
