"""Trusted side: inputs drawn all of one sign get random signs where the task is defined on them.

Why. On inputs of one sign (`torch.rand`, uniform on [0, 1)) every partial sum of a long reduction grows
with its length, so an honest fp32 running sum may err by u * sqrt(K / 3) of the result (SKILL.md allows
any summation order), and the precision audit's allowance must grant that. Operands rounded to TF32 or
bf16 *without* a bias (stochastic rounding, or round-to-nearest with the probe's bias measured and
removed: common/rounding_probe.py) err at random, about 2^-11 / sqrt(K) of the result for TF32, which
sits inside that allowance from K of a few thousand on: a white-box review passed stochastically rounded
TF32 at K = 65536 (0.42 of a bound of 3.27) and bf16 at 3.23. With random signs the partial sums walk
instead of growing, the honest allowance shrinks to what the terms give, and the same kernels stand at
84.6 (TF32) and 571 (bf16) (CPU emulation, benchmarks/precision_variants.py, docs/design/precision.md).

What. On two draws made here (never handed to anyone), an input position *qualifies* when it is a
floating tensor whose values are all of one sign, not all zero, not all integers (a 0/1 mask, an index
table stored as floats) and not the same on both draws (a constant table). The qualifying positions get a
random sign per element and a power-of-two factor (exact, so the rounding probe's bits stay as they are),
tried with factors 1, 1/2, ... 1/16, and kept only where the task is defined on them:
- the forward does not raise and its outputs stay finite (log, sqrt, a probability's BCE refuse them);
- the share of output elements beyond 4 x atol stays at least half of what it was as drawn (a mean or a
  ReLU of a shifted product would shrink towards zero, where the tolerance accepts a trivial answer);
- an honest computation stays well inside the tolerance: SIGMAS x the truth's propagated error (truth.py),
  over atol + rtol |y|, at most WELL (or what it was as drawn); where it is not, a smaller factor is tried.
All positions together first; where that is refused, one at a time, keeping each that is accepted with
those kept before. No float64 truth (truth.py's problem), no mixing: the precision audit is what it serves.

Both workers then apply the signs to every draw (candidate/inputs.py: draw_inputs), verification, warm-up
and timed calls alike, so no call looks different. The input audit runs on the mixed draws; an input it
finds weak or ignored there gets its signs back (the task matters less on them) and the audit runs again.
SKILL.md states the rule: compute the operator for either sign.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from cuda_agent.judge.candidate.inputs import Signs, mix_signs, mixable
from cuda_agent.judge.trusted import input_audit, truth_rows
from cuda_agent.judge.trusted.audit import all_finite, explained_by, outputs_or_none
from cuda_agent.judge.trusted.compare import Tolerance
from cuda_agent.judge.trusted.truth import Truth, TruthModel
from cuda_agent.task import tensor_bytes

FACTORS = (1.0, 0.5, 0.25, 0.125, 0.0625)  # powers of two: multiplying by one is exact
SIGMAS = 6.0  # an honest output's error is taken as this many propagated standard errors
WELL = 0.5  # ... which must stay within this share of the tolerance
ABOVE = 4.0  # elements beyond this many atol are the ones the tolerance can tell from zero
KEEP_ABOVE = 0.5  # mixing may not cut their share below half of what it was as drawn
MAX_POSITIONS = 8  # one at a time beyond the first try: at most this many positions
TOO_TIGHT = "too tight"
HELD_DRAWS = 4  # the sign audit holds two draws, a mixed one and their outputs: only where they fit
GIVEN_BACK = "on inputs of both signs it matters less (the input audit found it weak or ignored there)"


@dataclass
class SignAudit:
    """The positions given random signs (position -> factor) and why the others that qualified were not."""

    mixed: Signs = field(default_factory=dict)
    refused: dict[int, str] = field(default_factory=dict)

    @property
    def signs(self) -> Signs | None:
        """What draw_inputs takes: None where nothing is mixed."""
        return dict(self.mixed) if self.mixed else None

    def give_back(self, positions: Sequence[int], why: str) -> None:
        """Positions whose signs are withdrawn (the input audit found them weak on the mixed draws)."""
        for position in positions:
            if self.mixed.pop(position, None) is not None:
                self.refused[position] = why

    def report(self) -> dict[str, Any]:
        return {"mixed": {f"input {k}": f for k, f in sorted(self.mixed.items())},
                "refused": {f"input {k}": why for k, why in sorted(self.refused.items())}}  # fmt: skip


def qualifies(first: Any, second: Any) -> bool:
    """A floating tensor of one sign, not all zero, not all integers, drawn differently each time."""
    if not mixable(first) or not isinstance(second, torch.Tensor) or second.shape != first.shape:
        return False
    lowest, highest = float(first.min()), float(first.max())
    if lowest < 0 < highest or (lowest == 0 and highest == 0):
        return False
    if bool(torch.equal(first, first.round())):
        return False
    return not torch.equal(first, second)


def honest_share(truths: Sequence[Truth | None], outputs: Sequence[torch.Tensor], tol: Tolerance) -> float:
    """How much of the tolerance an honest computation may use: the largest SIGMAS x sigma over
    atol + rtol |y| over every element of every output with a truth (0 where none has an error model).
    A truth made on a block of the batch's rows (truth_rows.py: a GPU too small for the whole batch's) is
    held to the outputs on those rows; an output that does not keep the batch's rows has no error model
    here, as the block's truth cannot stand for it (truth_rows.agrees refuses it the same way)."""
    worst = 0.0
    for found, out in zip(truths, outputs, strict=False):
        if found is None or found.sigma is None or not out.is_floating_point():
            continue
        out = truth_rows.on_rows(out, found.rows)
        if not _broadcasts(found.sigma, out):
            continue
        sigma = found.sigma.to(out.device, torch.float64)
        room = tol.atol + tol.rtol * out.detach().to(torch.float64).abs()
        share = (SIGMAS * sigma / room).nan_to_num(nan=0.0)
        worst = max(worst, float(share.max()) if share.numel() else 0.0)
    return worst


def _broadcasts(sigma: torch.Tensor, out: torch.Tensor) -> bool:
    try:
        return torch.broadcast_shapes(sigma.shape, out.shape) == out.shape
    except RuntimeError:
        return False


def above_share(outputs: Sequence[torch.Tensor], tol: Tolerance) -> float:
    """The share of floating output elements the tolerance tells from zero (|y| > ABOVE x atol)."""
    above, total = 0, 0
    for out in outputs:
        if out.is_floating_point() and out.numel():
            above += int((out.detach().abs() > ABOVE * tol.atol).sum())
            total += out.numel()
    return above / total if total else 0.0


@dataclass(frozen=True)
class _Drawn:
    """The first draw's outputs and figures, as get_inputs() draws it: what mixing is held to."""

    share: float
    above: float


def choose(
    model: torch.nn.Module, first: list[Any], second: list[Any], tol: Tolerance, seed: int
) -> SignAudit:
    """The positions of `first` (a second draw `second` tells constant tables) to mix, and their factors."""
    result = SignAudit()
    positions = [k for k in range(len(first)) if qualifies(first[k], second[k] if k < len(second) else None)]
    if not positions:
        return result
    truth_model = TruthModel(model)
    base = outputs_or_none(model, first)
    truths = truth_model.outputs(first) if base is not None else None
    if base is None or truths is None:
        why = "the forward raises as drawn" if base is None else f"no float64 truth ({truth_model.problem})"
        result.refused = dict.fromkeys(positions, why)
        return result
    drawn = _Drawn(honest_share(truths, base, tol), above_share(base, tol))

    def refusal(signs: Signs) -> str | None:
        return _refusal(model, truth_model, mix_signs(first, seed, signs), tol, drawn)

    found, why = _first_factor(refusal, {}, positions)
    if found is not None:
        result.mixed = found
        return result
    if len(positions) == 1:
        result.refused[positions[0]] = why
        return result
    for position in positions[:MAX_POSITIONS]:
        found, why = _first_factor(refusal, result.mixed, [position])
        if found is None:
            result.refused[position] = why
        else:
            result.mixed = found
    result.refused.update(dict.fromkeys(positions[MAX_POSITIONS:], "not tried: too many inputs"))
    return result


def _first_factor(
    refusal: Callable[[Signs], str | None], kept: Signs, positions: list[int]
) -> tuple[Signs | None, str]:
    """`kept` with `positions` added at the largest factor that is not refused, or None and the last reason."""
    why = ""
    for factor in FACTORS:
        signs = {**kept, **dict.fromkeys(positions, factor)}
        found = refusal(signs)
        if found is None:
            return signs, ""
        why = found
        if not why.startswith(TOO_TIGHT):
            break
    return None, why


def _refusal(
    model: torch.nn.Module, truth_model: TruthModel, mixed: list[Any], tol: Tolerance, drawn: _Drawn
) -> str | None:
    """Why the task is not defined on `mixed` (None where it is)."""
    out = outputs_or_none(model, mixed)
    if out is None:
        return "the forward raises on inputs of both signs"
    if not all_finite(out):
        return "the outputs are not finite on inputs of both signs"
    above = above_share(out, tol)
    if above < KEEP_ABOVE * drawn.above:
        return (f"the outputs shrink towards zero on inputs of both signs ({above:.0%} of elements beyond "
                f"{ABOVE:g} x atol, {drawn.above:.0%} as drawn)")  # fmt: skip
    truths = truth_model.outputs(mixed)
    if truths is None:
        return f"no float64 truth on inputs of both signs ({truth_model.problem})"
    share = honest_share(truths, out, tol)
    if share > max(WELL, drawn.share):
        return f"{TOO_TIGHT}: an honest computation may use {share:.2g} of the tolerance"
    return None


def explain(model: torch.nn.Module, unmixed: Sequence[Any], produced: Sequence[torch.Tensor], tol: Tolerance,
            audit: SignAudit) -> str | None:  # fmt: skip
    """After a failed comparison on a mixed draw: when the candidate's outputs are what the reference gives
    on the draw without the signs, the kernel assumed one sign (or ignored the signs). A sentence, or None."""
    if not audit.mixed:
        return None
    names = ", ".join(f"input {k}" for k in sorted(audit.mixed))
    return explained_by(model, unmixed, produced, tol, f"the outputs are what the reference gives on {names} "
                        "with the signs get_inputs() draws: " + SIGN_HINT.format(names=names))  # fmt: skip


SIGN_HINT = (
    "the judge gives {names} random signs (SKILL.md, 'Parameters and inputs'): compute the operator for "
    "inputs of either sign, never assuming the sign get_inputs() draws"
)


def audit_inputs(
    model: torch.nn.Module, first: list[Any], seeds: Sequence[int], tol: Tolerance, hold: float | None,
    draw: Callable[[int, Signs | None], list[Any]], mix: bool = True, inputs: bool = True,
) -> tuple[SignAudit, input_audit.InputAudit]:  # fmt: skip
    """The signs (`mix`: with the precision audit on), then the input audit on draws carrying them
    (`inputs`: with it on); an input weak or ignored on the mixed draws gets its signs back and the input
    audit runs again. `first` is the draw of `seeds[0]`, as drawn; `draw(seed, signs)` makes the others."""
    signs = SignAudit()
    if mix and len(seeds) > 1 and (hold is None or HELD_DRAWS * tensor_bytes(first) <= hold):
        signs = choose(model, first, draw(seeds[1], None), tol, secrets.randbits(62))
    while True:
        current = signs.signs
        if not inputs:
            return signs, input_audit.InputAudit()
        mixed = mix_signs(first, seeds[0], current) if current else list(first)
        sets = input_audit.audit_sets(mixed, lambda seed, now=current: draw(seed, now), seeds, hold)
        found = input_audit.audit_inputs(model, sets, tol, hold_bytes=hold)
        labels = {*found.weak, *found.ignored}
        weaker = [k for k in signs.mixed if input_audit.label(k) in labels]
        if not weaker:
            return signs, found
        signs.give_back(weaker, GIVEN_BACK)
