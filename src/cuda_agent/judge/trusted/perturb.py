"""Trusted side: move every floating-point parameter of the reference to a generic point (issue 35, class 1).

Why. The candidate loads the reference's `state_dict`. A parameter initialised with structure (`eye_`, a
Dirac convolution, a diagonal or permutation matrix, a block-diagonal matrix, a dense conv weight masked
to depthwise) keeps that structure on every input set, so a kernel that assumes it (a copy for a GEMM, a
gather for a permutation product, a depthwise conv for a dense one) skips most of the work and is exact.
`audit.vary_constant_state` varies only all-equal tensors and `audit.make_parameters_matter` only scales
tensors that do not matter: neither removes a structure.

What. Dense noise on every entry of every floating-point `Parameter`, zeros included, drawn from a
generator seeded with a secret of the judgment, applied to the reference model before its `state_dict` is
saved for the candidate: both compute on the same perturbed state, so comparisons stay exact, and the
candidate cannot know the point before it is handed the weights. Buffers are the model's constants (a
causal mask, an index table) and stay as they are (all-equal ones are varied by vary_constant_state).

How, by the tensor's domain, so that a std, an exponent or a log's argument stays valid:

| values | new value | why |
|---|---|---|
| all >= 0 (or all <= 0), zeros or not | p * exp(level * z) + level * rms(p) * abs(z') (sign kept) | every entry moves by the tensor's scale, the sign stays |
| mixed signs | p + level * rms(p) * z | additive: zeros move (multiplicative noise would keep them) |

The additive part applies to strictly positive tensors too: multiplicative noise alone keeps each entry's
relative size, so entries far out on a decay or a Gaussian tail (tiny, but not zero in float32) stayed
tiny, and a kernel that dropped them (a band of a decaying mixing matrix, the middle taps of a wide
Gaussian filter: 2-3x less work) passed the comparison and the precision audit (found by a white-box
review, 2026-12-04).

z, z' are standard normal per entry; rms(p) is the root mean square of the tensor's nonzero entries, so
the noise has the scale of the tensor, not of each entry (noise proportional to each entry keeps every
zero, and with it identity, permutation, block and mask structure), and zeros move by a share of what the
entries are (so that a threshold in the forward, round(W) or mask > 0.5, cannot undo the move). An entry that rounds back to its old value in its own dtype
(fp16, bf16) is moved by one representable step: every entry changes, in every dtype.

The moved values then get the rounding probe's low mantissa bits (common/rounding_probe.py), as every
input does: weights rounded to TF32, fp16 or bf16 err one way, which the precision audit sees at any K.

The perturbation must matter: for each parameter, the reference's output with it perturbed must differ
from the output with its value before (what a kernel assuming its old structure computes) beyond `margin`
times the tolerance; where it does not, the level grows, as make_parameters_matter grows scales. Where the
output becomes non-finite or the forward raises (a domain the table does not know), the level shrinks;
where no level keeps the output finite, the parameter keeps its value and is reported.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from cuda_agent.judge.common import rounding_probe
from cuda_agent.judge.trusted.audit import all_finite, differs, outputs_or_none
from cuda_agent.judge.trusted.compare import Tolerance

# Noise levels tried in turn (in units of the tensor's rms, or of log-scale for the multiplicative part),
# growing until the perturbation matters; and the smaller ones tried when the output is not finite.
ADDITIVE_LEVELS = (0.5, 2.0, 8.0)
MULTIPLICATIVE_LEVELS = (0.5, 1.0, 2.0)
SHRINK_LEVELS = (0.125, 0.03)


@dataclass
class Perturbation:
    """What the perturbation did, and the values before it (kept to explain a failed comparison)."""

    levels: dict[str, float] = field(default_factory=dict)  # name -> noise level used
    does_not_matter: list[str] = field(default_factory=list)  # perturbed, but the output barely moves
    kept: list[str] = field(default_factory=list)  # not perturbed: every level broke the forward
    unchecked: list[str] = field(default_factory=list)  # perturbed at the first level, time ran out
    before: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)

    def report(self) -> dict[str, Any]:
        return {"perturbed": dict(self.levels), "perturbation_does_not_matter": list(self.does_not_matter),
                "not_perturbed": list(self.kept), "perturbation_unchecked": list(self.unchecked)}  # fmt: skip


def parameters(model: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    """Every floating-point parameter, once (tied parameters share one tensor)."""
    seen: set[int] = set()
    found = []
    for name, p in model.named_parameters():
        if id(p) in seen or not p.is_floating_point() or p.numel() == 0:
            continue
        seen.add(id(p))
        found.append((name, p))
    return found


def root_mean_square(p: torch.Tensor) -> float:
    """The root mean square of the tensor's nonzero entries: its scale, without overflow or underflow.

    Nonzero entries only: over all entries, a sparse structure's zeros moved by a small share of its
    scale (an identity of 512: 0.022), which no threshold in the forward crosses, so round(W), a mask read
    as `mask > 0.5` and relu(W - 0.9) kept the structure a kernel could assume (white-box probe,
    2026-12-06). Scaled by the largest entry first: p**2 overflows float32 from |p| ~ 1.8e19, where the
    rms fell back to 1.0 and a permutation scaled by 1e20 kept its structure under noise of size 1. 1.0
    only where every entry is zero or the tensor holds no finite scale."""
    kept = torch.isfinite(p)
    finite = p if bool(kept.all()) else p[kept]
    nonzero = int(torch.count_nonzero(finite))
    if nonzero == 0:
        return 1.0
    largest = float(finite.abs().max())
    if not 0 < largest < float("inf"):
        return 1.0
    return largest * float((finite / largest).square().sum().div(nonzero).sqrt())


def perturbed(value: torch.Tensor, level: float, generator: torch.Generator) -> torch.Tensor:
    """A generic point near `value` (see the module's table), every entry moved, in `value`'s dtype."""
    p = value.detach().to(torch.float32)
    z = torch.randn(p.shape, generator=generator, device=p.device, dtype=torch.float32)
    rms = root_mean_square(p)
    nonneg, nonpos = bool((p >= 0).all()), bool((p <= 0).all())
    if nonneg or nonpos:
        z2 = torch.randn(p.shape, generator=generator, device=p.device, dtype=torch.float32)
        new = p * torch.exp(level * z) + (1.0 if nonneg else -1.0) * level * rms * z2.abs()
    else:
        new = p + level * rms * z
    out = rounding_probe.settle(new.to(value.dtype))  # lowered precision of the weights errs one way
    stuck = out == value
    if bool(stuck.any()):  # less than half a step of the dtype: one representable step, the sign kept
        if nonneg or nonpos:
            direction = torch.full_like(p, 1.0 if nonneg else -1.0)
        else:
            direction = torch.where(z >= 0, 1.0, -1.0)
        target = (direction * float("inf")).to(value.dtype)
        out[stuck] = torch.nextafter(value[stuck].cpu(), target[stuck].cpu()).to(value.device)
    return out


def _generators(seed: int) -> Callable[[torch.device], torch.Generator]:
    """One generator per device, seeded from a hash of `seed`: the judgment's `init_seed` also seeded the
    model's initialisation, and noise drawn from the same stream as a `torch.randn` weight would be that
    weight again (a perturbation that only rescales it, zeros kept)."""
    derived = int.from_bytes(hashlib.sha256(f"perturb:{seed}".encode()).digest()[:8], "big") % 2**63
    made: dict[str, torch.Generator] = {}

    def get(device: torch.device) -> torch.Generator:
        key = str(device)
        if key not in made:
            made[key] = torch.Generator(device=device)
            made[key].manual_seed(derived)
        return made[key]

    return get


def _first_that_matters(
    model: torch.nn.Module, inputs: Sequence[Any], p: torch.Tensor, before: torch.Tensor, grow: Sequence[float],
    base: list[torch.Tensor], base_finite: bool, wide: Tolerance,
    generator: Callable[[torch.device], torch.Generator],
) -> tuple[float, torch.Tensor, list[torch.Tensor]] | None:  # fmt: skip
    """The smallest growing level whose perturbation of `p` changes the output beyond `wide` (else the
    largest that keeps the forward finite); if even the first breaks it, the largest shrinking one that
    does not. Returns (level, value, outputs), or None; `p` holds the last value tried."""
    chosen = None
    for level in grow:
        value = perturbed(before, level, generator(p.device))
        p.copy_(value)
        out = outputs_or_none(model, inputs)
        if out is None or (base_finite and not all_finite(out)):
            break  # a larger level would break it more
        chosen = (level, value, out)
        if differs(base, out, wide):
            return chosen
    if chosen is not None:
        return chosen
    for level in SHRINK_LEVELS:
        value = perturbed(before, level, generator(p.device))
        p.copy_(value)
        out = outputs_or_none(model, inputs)
        if out is not None and (not base_finite or all_finite(out)):
            return level, value, out
    return None


def move_parameters(
    model: torch.nn.Module,
    inputs: Sequence[Any],
    tol: Tolerance,
    seed: int,
    margin: float = 4.0,
    budget_s: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
) -> Perturbation:
    """Perturb every floating-point parameter of `model` in place (see the module docstring); the
    perturbation of each must change the output on `inputs` beyond `margin` times the tolerance."""
    began = clock()
    wide = Tolerance(tol.atol * margin, tol.rtol * margin)
    generator = _generators(seed)
    result = Perturbation()
    base = outputs_or_none(model, inputs)
    base_finite = base is not None and all_finite(base)
    with torch.no_grad():
        for name, p in parameters(model):
            before = p.detach().clone()
            if not bool(torch.isfinite(before.float()).all()):
                result.kept.append(name)
                continue
            result.before[name] = before
            multiplicative = bool((before > 0).all()) or bool((before < 0).all())
            grow = MULTIPLICATIVE_LEVELS if multiplicative else ADDITIVE_LEVELS
            if base is None or clock() - began > budget_s:  # no forward to check against: perturb, unchecked
                p.copy_(perturbed(before, grow[0], generator(p.device)))
                result.levels[name] = grow[0]
                result.unchecked.append(name)
                continue
            chosen = _first_that_matters(model, inputs, p, before, grow, base, base_finite, wide, generator)
            if chosen is None:  # every level broke the forward: the parameter keeps its value
                p.copy_(before)
                del result.before[name]
                result.kept.append(name)
                continue
            level, value, out = chosen
            p.copy_(value)
            result.levels[name] = level
            if not differs(base, out, wide):
                result.does_not_matter.append(name)
            base = out
    if result.unchecked:  # the unchecked ones together must still leave a finite output
        final = outputs_or_none(model, inputs)
        if final is None or (base_finite and not all_finite(final)):
            for name, p in parameters(model):
                if name in result.unchecked:
                    p.copy_(result.before.pop(name))
                    result.levels.pop(name, None)
                    result.kept.append(name)
            result.unchecked = []
    return result


STRUCTURE_HINT = (
    "the judge moves every floating-point parameter, zeros included, to a random point before verifying "
    "(SKILL.md, 'Parameters and inputs'): compute with the weights the state_dict gives, never with a "
    "structure they had at initialisation (identity, Dirac, diagonal, permutation, block-diagonal, a mask)"
)


EXPLAINED_ONE_BY_ONE = 8  # parameters tried one at a time by `explain` (then all of them together)


def explain(
    model: torch.nn.Module, inputs: Sequence[Any], produced: Sequence[torch.Tensor], tol: Tolerance,
    perturbation: Perturbation,
) -> str | None:  # fmt: skip
    """After a failed comparison, a sentence for the reason when the candidate's outputs are what the model
    gives with one parameter as it was before the perturbation (a kernel assuming that initialiser's
    structure), with one parameter's initial zero entries forced back to zero (a kernel assuming the zero
    pattern, a diagonal, blocks, a depthwise mask, while reading the values), or with every parameter as
    it was. None otherwise. Runs only after a failure: up to 2 x EXPLAINED_ONE_BY_ONE + 1 forwards."""
    named = {name: p for name, p in parameters(model) if name in perturbation.before}
    if not named:
        return None
    current = {name: p.detach().clone() for name, p in named.items()}
    candidates: list[tuple[str, dict[str, torch.Tensor]]] = []
    for name in list(named)[:EXPLAINED_ONE_BY_ONE]:
        candidates.append((f"{name} at its initial value", {name: perturbation.before[name]}))
    for name in list(named)[:EXPLAINED_ONE_BY_ONE]:
        zeros = perturbation.before[name] == 0
        if bool(zeros.any()):
            candidates.append((f"{name}'s initial zero entries set back to zero",
                               {name: torch.where(zeros, 0, current[name])}))  # fmt: skip
    if len(named) > 1:
        candidates.append(("every parameter at its initial value", dict(perturbation.before)))
    try:
        with torch.no_grad():
            for what, values in candidates:
                for name, p in named.items():
                    p.copy_(values.get(name, current[name]))
                out = outputs_or_none(model, inputs)
                if out is not None and not differs(out, list(produced), tol):
                    return f"the outputs are what the reference gives with {what}: {STRUCTURE_HINT}"
    finally:
        with torch.no_grad():
            for name, p in named.items():
                p.copy_(current[name])
    return None
