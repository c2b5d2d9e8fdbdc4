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

A norm inside an output the size of its input (x / ||x||_F: the norm is global but each output reads one
element) fails the count; global_probe.py finds it on the reference's float64 truth, and its magnitude is
searched there too, the smallest power of two that moves half of the outputs by 3/64 of their own
magnitude. Where it does not reach: a mean over many rows of a bounded per-row term (a cosine similarity
loss), in docs/design/precision.md's open table. SKILL.md states the rule.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from cuda_agent.judge.candidate.inputs import OUTLIERS_PER_INPUT, Outliers, mixable, plant_outliers
from cuda_agent.judge.trusted import global_probe
from cuda_agent.judge.trusted.compare import Tolerance
from cuda_agent.judge.trusted.truth import TruthModel
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
    # Inputs the count did not qualify that the float64 probe found global (position -> share of the
    # outputs that moved) and, for the probed others, why they were not probed where they could not be.
    global_inputs: dict[int, float] = field(default_factory=dict)
    not_probed: dict[int, str] = field(default_factory=dict)

    @property
    def outliers(self) -> Outliers | None:
        """What draw_inputs takes: None where nothing is planted."""
        return dict(self.planted) if self.planted else None

    def report(self) -> dict[str, Any]:
        return {"planted": {f"input {k}": f for k, f in sorted(self.planted.items())},
                "refused": {f"input {k}": why for k, why in sorted(self.refused.items())},
                "elements_per_output": {f"input {k}": n for k, n in sorted(self.per_output.items())},
                "global": {f"input {k}": round(share, 4) for k, share in sorted(self.global_inputs.items())},
                "not_probed": {f"input {k}": why for k, why in sorted(self.not_probed.items())}}  # fmt: skip


def audit(
    model: torch.nn.Module, draw: Callable[[], list[Any]], tol: Tolerance,
    min_per_output: int | None = None, first: list[Any] | None = None, truth_model: TruthModel | None = None,
    probe_global: bool = True,
) -> OutlierAudit:  # fmt: skip
    """The magnitude of every qualifying input of the task (see the module docstring). `draw` gives an input
    set as the workers draw it so far (transforms and signs applied), a fresh one each call; `first`, a set
    the caller holds already, is used to count the outputs and for the global probe, so a task that cannot
    qualify costs no second input set (a 16 GiB pooling input) and one whose inputs are all below the
    threshold not even a forward. `truth_model`: the reference's float64 truth where the caller has one
    (made here otherwise, only where an input is probed); `probe_global` off leaves x / ||x|| unprobed."""
    min_per_output = MIN_ELEMENTS_PER_OUTPUT if min_per_output is None else min_per_output
    found = OutlierAudit()
    inputs = draw() if first is None else first
    large = [p for p, v in enumerate(inputs) if mixable(v) and v.numel() >= min_per_output]
    if not large:
        return found
    with torch.no_grad():
        outputs = max(1, sum(t.numel() for t in flatten_tensors(model(*inputs))))
    for position in large:
        if inputs[position].numel() // outputs >= min_per_output:
            found.per_output[position] = inputs[position].numel() // outputs
    seed = secrets.randbits(62)
    if probe_global and (probed := [p for p in large if p not in found.per_output]):
        truth_model = truth_model or TruthModel(model)
        for position in probed:  # on copies of the held set (global_probe.py)
            share, why = global_probe.probe(truth_model, inputs, position, seed)
            if share is None:
                found.not_probed[position] = why
            elif share >= global_probe.GLOBAL_SHARE:
                found.global_inputs[position] = share
        if not found.global_inputs:
            truth_model.release()  # its float64 parameters wait for the verification sets (truth.py)
    del inputs
    if not found.per_output and not found.global_inputs:
        return found
    drawn = draw()  # as the workers draw it: each input's scale, then the outputs the outliers must move
    rms = {p: float(drawn[p].double().square().mean().sqrt()) for p in [*found.per_output, *found.global_inputs]}
    with torch.no_grad():
        base = [t.detach().clone() for t in flatten_tensors(model(*drawn))]
    truth = global_probe.truth_values(truth_model, drawn) if found.global_inputs and truth_model else None
    del drawn
    floating = [t for t in base if t.is_floating_point()]
    if not floating:
        found.refused.update({p: "no floating-point output to move" for p in [*found.per_output, *found.global_inputs]})
        return found
    scale = [max(float(t.abs().max()), tol.atol) if t.numel() else tol.atol for t in floating]
    for position in found.per_output:
        outcome = _count_outcome(model, draw, position, seed, floating, scale)
        _settle(found, position, _magnitude(outcome, rms[position]))
    for position in found.global_inputs:
        if truth is None or truth_model is None:
            found.refused[position] = f"no float64 truth to search its magnitude on ({truth_model and truth_model.problem})"
            continue
        searched = _magnitude(global_probe.global_outcome(truth_model, draw, position, seed, truth), rms[position])
        if searched[0] is not None:  # searched on the truth: the reference itself must stay finite up to twice it
            exponent = math.frexp(searched[0])[1] - 1
            for tried in (exponent, exponent + 1):
                if (result := _count_outcome(model, draw, position, seed, floating, scale)(tried)) not in ("moves", "short"):
                    searched = None, result
                    break
        _settle(found, position, searched)
    if truth_model is not None:
        truth_model.release()
    return found


def _settle(found: OutlierAudit, position: int, searched: tuple[float | None, str]) -> None:
    magnitude, why = searched
    if magnitude is None:
        found.refused[position] = why
    else:
        found.planted[position] = magnitude


def _count_outcome(
    model: torch.nn.Module, draw: Callable[[], list[Any]], position: int, seed: int, base: list[torch.Tensor],
    scale: list[float],
) -> Callable[[int], str]:  # fmt: skip
    """The search's test for a counted input: 'moves' where outliers of 2^exponent at `position` move some
    output of the reference by MOVE each (of its largest magnitude or atol), 'short' where they do not, or
    why that magnitude cannot be used (the input's dtype cannot hold it, the outputs are not finite)."""

    def outcome(exponent: int) -> str:
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

    return outcome


def _magnitude(outcome: Callable[[int], str], rms: float) -> tuple[float | None, str]:
    """The smallest power of two for which `outcome` says 'moves', and why none. Exponents are tried at
    growing gaps (1, 2, 4, ... above the first), then bisected between the last that fell short and the
    first that did not (or that overflowed): about 10 forwards where a walk one exponent at a time took up
    to 65 (a linear loss at 2^30 elements wants about 2^24 times its scale)."""
    if not rms > 0 or not math.isfinite(rms):
        return None, "it is drawn all zero or not finite"
    first = math.frexp(rms)[1] + 1  # 2^first >= twice the root mean square
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
