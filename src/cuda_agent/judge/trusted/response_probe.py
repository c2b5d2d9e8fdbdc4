"""Trusted side: the low-bit response check. Does the candidate's output move as the exact one does when
only the bits that a lowered precision drops are changed?

Why. The precision audit (precision.py) bounds each output's error by what an honest computation in the
task's precision can have. On long one-signed reductions that allowance is a running sum's drift, and a
kernel that rounds its fp32 operands to TF32 (or bf16) and then removes the bias it measured (per row and
column, from its own rounding errors) stays inside it: a review showed it passing at K = 4096 and beyond
(docs/design/precision.md). Its error is no larger than an honest running sum's; what it lacks is any
response to the operands' low bits. Measured on an output, that is invisible; measured on a *difference*
between two input sets that differ only in those bits, it is the whole signal.

What. One base input set, drawn from a fresh secret seed and never shown to the candidate, is changed
twice: on every generic fp32 value (rounding_probe.py's sense) the bits below the lowest bit that TF32,
fp16 and bf16 keep *and* below the rounding probe's own bits (bits 0-11; bits 0-27 of a float64 value,
below what float32 keeps) are moved up in one copy and down in the other, by a random amount. Rounding such
a value to TF32, fp16 or bf16 (to nearest or by truncation) gives the same number for both copies, so a
kernel that rounds its inputs computes the same thing twice. The direction of each element's move follows
the reference's gradient of a secret random-sign weighting `w` of its outputs (sign of the gradient minus
its median along the last axis, so the moves along each row balance and no row or column sum sees them),
so the exact change of the outputs, `d`, adds up coherently along `w`.

The statistic. With E = (candidate(up) - candidate(down)) - d, per floating output (the largest 1% of |E|
left out: flips at discontinuities), the alignment t = <w, E> / |E| and the missing share m = <w, E> /
<w, d>. An honest kernel's E is its rounding noise on two input sets; `w` is secret and independent of
it, so t is a sum of random-sign terms: |t| > `ALIGNMENT` (6) has probability below 2 exp(-18) whatever the
noise's size or correlation (Hoeffding). A kernel that does not respond to the low bits has E = -d, which
is aligned with `w` by construction: t grows like the square root of the output's size, m is -1. Smooth
systematic errors (an approximation whose error is a smooth function of the input, 3xTF32's last bits) do
align, but by a tiny share of d; `MISSING` (10%) keeps them out. The check fails when both hold.

The weight pair. Parameters reach the candidate once, in the state dict, so the pair above cannot move
them. Before the state is written, each fp32 parameter's direction is taken from the same backward (the
gradient of the same secret weighting, at the same base set), and the parameters are moved up in their
bits 0-5 (`WEIGHT_BITS`: below what any layout of 16 or fewer mantissa bits keeps, and below its rounding
bit): that is the state the candidate loads, and the base is never handed over. After the pair, set B runs
again in a second ModelNew given the parameters moved down instead (candidate/worker.py `run_variant`);
the same statistic between the first model's output on B and the second's (`responses`) refuses weights
stored or used in fewer bits, corrected or not. Because the loaded point is itself moved, a rounding of
the loaded weights errs along the secret direction, which the precision audit sees too, and a kernel exact
only in its second instance still fails.

What it does not see (stated in docs/design/precision.md): an intermediate rounded to fp16 responds to a
change in expectation (stochastic-rounding-like), so a lowered intermediate passes it as it passes the
audit. A kernel keeping state across calls that recognises the second copy and computes it exactly still
fails: the first copy's missing response stays in E (the base set, which it could key on, is never run).
One that keeps the first copy's inputs and output and adds the exact change to get the second's does not,
and likewise a second ModelNew that keeps the first's parameters (one process) and adds the exact change;
each pays one exact computation of the difference per judgment and still meets the spot checks' audit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from cuda_agent.judge.common.rounding_probe import PATTERNS

# dtype -> the bits a move may change (below the lowest bit TF32/fp16/bf16 keep, and below the rounding
# probe's bits: rounding to those formats gives the same number before and after a move).
MOVABLE_BITS: dict[torch.dtype, int] = {torch.float32: 12, torch.float64: 28}
# ... and for the weight pair's parameters: bits 0-5 of an fp32 value, below what any layout of 16 or fewer
# mantissa bits keeps (24-bit packings, bf16 pairs), and below the half-bit that rounds to it (bit 6).
WEIGHT_BITS: dict[torch.dtype, int] = {torch.float32: 6, torch.float64: 28}
# |t| above this is an alignment no honest rounding noise reaches (P < 2 exp(-ALIGNMENT^2 / 2)).
ALIGNMENT = 6.0
# ... and the candidate must miss at least this share of the exact change along w to fail.
MISSING = 0.10
# The share of an output's elements (the largest |E|) left out: flips at discontinuities.
TRIM = 0.01
# Rows shorter than this are balanced over the whole tensor instead of along the last axis.
MIN_ROW = 16
# A tensor with fewer nonzero gradient entries than this is never called a plain sum's operand (`plain_sum`):
# one or a few entries are integer multiples of the smallest by chance (a scalar always is).
MIN_SUMMED = 64
# ... and how far from an integer a gradient entry over the smallest may be (the gradient is computed in
# the task's dtype: a scaled scan's gradient, a sum of up to 2^15 equal terms in fp32, is off by ~1e-3).
SUMMED_SLACK = 1e-2


def probed(t: Any) -> bool:
    """An input whose low bits the check moves: a floating fp32 or float64 tensor with elements."""
    return isinstance(t, torch.Tensor) and t.dtype in MOVABLE_BITS and t.numel() > 0


def output_weights(outputs: list[torch.Tensor], generator: torch.Generator) -> list[torch.Tensor | None]:
    """A secret random sign per element of every floating output (None for the others)."""
    weights: list[torch.Tensor | None] = []
    for out in outputs:
        if not out.is_floating_point() or out.is_complex() or out.numel() == 0:
            weights.append(None)
            continue
        bits = torch.randint(0, 2, out.shape, generator=generator, device=out.device, dtype=torch.int8)
        weights.append(bits.to(out.dtype) * 2 - 1)
    return weights


def aim(model: Any, inputs: list[Any], generator: torch.Generator, flatten: Any,
        parameters: dict[str, torch.Tensor] | None = None, summed: list[str] | None = None) -> tuple[
        list[torch.Tensor | None], list[torch.Tensor | None]]:  # fmt: skip
    """(the direction of each input's move, the output weights): signs of the gradient of <w, model(inputs)>
    with respect to each probed input, less its median along the last axis; None for an input the outputs
    take only as a plain sum (`plain_sum`: its moves would refuse an honest running sum). Raises ValueError
    where no probed input is left to move (a task whose outputs do not depend differentiably on its fp32
    inputs, or only through plain sums: the check has nothing to aim at). Where `parameters` (name -> the
    model's parameter) are given, the same backward gives theirs: each entry is replaced by its direction,
    or dropped where the outputs do not depend on it or take it only as a plain sum (a bias: the weight
    pair's moves, `weight_moves`). `summed`, where given, receives what was left out as a plain sum
    ("input 0", a parameter's name)."""
    leaves = [t.detach().clone().requires_grad_(True) if probed(t) else None for t in inputs]
    if not any(leaf is not None for leaf in leaves):
        raise ValueError("no fp32 or float64 input")
    args = [leaf.clone() if leaf is not None else (t.clone() if isinstance(t, torch.Tensor) else t)
            for leaf, t in zip(leaves, inputs, strict=True)]  # fmt: skip
    named = dict(parameters or {})
    asked = {name: p.requires_grad for name, p in named.items()}
    try:
        for p in named.values():
            p.requires_grad_(True)
        with torch.enable_grad():
            outputs = flatten(model(*args))
            weights = output_weights(outputs, generator)
            terms = [(o * w).sum() for o, w in zip(outputs, weights, strict=True) if w is not None and o.requires_grad]
            if not terms:
                raise ValueError("no floating output depends differentiably on the inputs")
            wanted = [leaf for leaf in leaves if leaf is not None] + list(named.values())
            grads = torch.autograd.grad(torch.stack([t.double() for t in terms]).sum(), wanted, allow_unused=True)
    finally:
        for name, p in named.items():
            p.requires_grad_(asked[name])
    found = iter(grads)
    left_out = summed if summed is not None else []
    directions: list[torch.Tensor | None] = []
    for k, leaf in enumerate(leaves):
        grad = next(found) if leaf is not None else None
        if grad is not None and plain_sum(grad):
            left_out.append(f"input {k}")
            grad = None
        directions.append(None if grad is None else _balanced_sign(grad.detach()))
    if parameters is not None:
        parameters.clear()
        for name, grad in zip(named, found, strict=True):
            if grad is not None and plain_sum(grad):
                left_out.append(name)
            elif grad is not None and bool(grad.any()):
                parameters[name] = _balanced_sign(grad.detach())
    if all(d is None or not bool(d.any()) for d in directions):
        if any(name.startswith("input ") for name in left_out):
            raise ValueError(
                "the outputs take every fp32 input they depend on only as a plain sum (a sum, mean or scan of "
                "it): an honest fp32 running sum drops those bits itself beyond 2^13 terms of one sign"
            )
        raise ValueError("the outputs' gradient is zero on every fp32 input")
    return directions, weights


def plain_sum(grad: torch.Tensor) -> bool:
    """Whether the outputs take this tensor only as a plain sum: every nonzero entry of the gradient of
    <w, outputs> is an integer multiple of the smallest one (a sum, mean, scan or masked sum of it, a bias
    added, all times one scale; not a product with anything generic).

    Why such operands are not moved. An fp32 addition rounds its operand to the accumulator's ulp. Once a
    running sum is 2^13 times its terms (2^13-2^14 terms of one sign: KernelBench's cumsum rows of 32768,
    a mean over 16384), that ulp is 2^13 of the term's, and the rounding, decided by the term's bit 12 and
    up, ignores the moved bits 0-11 exactly as a rounding to TF32 would: an honest serial sum or scan
    misses a third or more of the exact change (seen on an H100, 2026-12-06: 38%, a running mean over
    16384). A product's low bits are generic, so an accumulator of products responds in expectation at any
    length; the moves stay on those operands, where rounding to TF32 or bf16 buys tensor-core speed. A
    plain sum gains nothing from fewer operand bits (its fp32 operands are read in full either way)."""
    g = grad.detach()
    nonzero = g[g != 0].to(torch.float64).abs()
    if nonzero.numel() < MIN_SUMMED or not bool(torch.isfinite(nonzero).all()):
        return False
    ratio = nonzero / nonzero.min()
    if float(ratio.max()) > 2.0**24:
        return False
    return bool(((ratio - ratio.round()).abs() <= SUMMED_SLACK).all())


def weighed_parameters(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The parameters the weight pair moves: floating fp32 or float64 ones with elements (buffers are the
    model's constants and stay as they are)."""
    return {name: p for name, p in model.named_parameters() if probed(p)}


def weight_moves(directions: dict[str, torch.Tensor], parameters: dict[str, torch.Tensor], up: bool,
                 generator: torch.Generator) -> dict[str, torch.Tensor]:  # fmt: skip
    """One of the weight pair's points: each parameter's bits below `WEIGHT_BITS` moved `up` (or down)
    along its direction. The candidate loads the first point; the base is never handed over."""
    return {name: moved(parameters[name].detach(), d, up, generator, WEIGHT_BITS) for name, d in directions.items()}


def _balanced_sign(grad: torch.Tensor) -> torch.Tensor:
    """sign(grad - its median along the last axis) (over the whole tensor for short rows), the gradient's
    own sign where it equals the median (a row of one value, as a sum's); 0 where the gradient is exactly
    zero (moving such an element cannot change the output)."""
    g = grad.to(torch.float64)
    rows = g.reshape(-1, g.shape[-1]) if g.dim() and g.shape[-1] >= MIN_ROW else g.reshape(1, -1)
    centre = rows.median(dim=-1, keepdim=True).values
    sign = torch.sign(rows - centre).reshape(g.shape)
    sign = torch.where(sign == 0, torch.sign(g), sign)  # at the median (a row of one value: a sum), its sign
    return torch.where(g == 0, torch.zeros_like(sign), sign).to(torch.int8)


def moved(t: torch.Tensor, direction: torch.Tensor | None, up: bool, generator: torch.Generator,
          bits: dict[torch.dtype, int] = MOVABLE_BITS) -> torch.Tensor:  # fmt: skip
    """A copy of `t` with each generic value moved in the direction given (`up`; the other way for not
    `up`): its movable low bits toward all-ones where that raises the value (toward one where it lowers
    it: negative values), by a uniform share of the room left; the bits above, and values that are not
    generic, as they were. Never to zero: a dropped part of
    exactly one half would round to even, and could round differently from the original."""
    out = t.detach().clone().contiguous()
    if direction is None:
        return out
    view, _, low, exponent = PATTERNS[t.dtype]
    span = (1 << bits[t.dtype]) - 1
    ints = out.view(view)
    power = ints & exponent
    generic = ((ints & low) != 0) & (power != 0) & (power != exponent)
    bits = ints & span
    share = torch.rand(t.shape, generator=generator, device=t.device, dtype=torch.float64)
    raised = bits + ((span - bits).to(torch.float64) * share).floor().to(view)
    lowered = 1 + ((bits - 1).clamp(min=0).to(torch.float64) * share).floor().to(view)
    sign = direction.to(t.device, torch.int8) * torch.sign(t).to(torch.int8)  # more bits: larger magnitude
    sign = sign if up else -sign
    new = torch.where(sign > 0, raised, torch.where(sign < 0, lowered, bits))
    ints.copy_(torch.where(generic, (ints & ~span) | new, ints))
    return out


@dataclass
class Finding:
    """One floating output's response: alignment `t`, missing share `missing`, elements compared."""

    output: int
    alignment: float
    missing: float
    elements: int

    @property
    def passed(self) -> bool:
        return not (abs(self.alignment) > ALIGNMENT and abs(self.missing) > MISSING)

    def record(self) -> dict[str, Any]:
        return {"output": self.output, "alignment": round(self.alignment, 2), "missing": round(self.missing, 4),
                "elements": self.elements}  # fmt: skip


def respond(up: torch.Tensor, down: torch.Tensor, exact_up: torch.Tensor, exact_down: torch.Tensor,
            weights: torch.Tensor, output: int) -> Finding:  # fmt: skip
    """The response statistic of one output (module docstring): the candidate's outputs on the two copies
    against the exact values on them."""
    d = exact_up.to(torch.float64) - exact_down.to(torch.float64)
    got = up.detach().to(d.device, torch.float64) - down.detach().to(d.device, torch.float64)
    error = (got - d).flatten()
    w = weights.to(d.device, torch.float64).flatten()
    d = d.flatten()
    keep = torch.isfinite(error) & torch.isfinite(d)
    error, w, d = error[keep], w[keep], d[keep]
    drop = int(TRIM * error.numel())
    if drop:
        cut = torch.topk(error.abs(), drop + 1, largest=True, sorted=True).values[-1]
        small = error.abs() <= cut
        error, w, d = error[small], w[small], d[small]
    norm = float(error.norm())
    along = float((w * error).sum())
    exact_along = float((w * d).sum())
    alignment = along / norm if norm > 0 else 0.0
    missing = along / exact_along if exact_along != 0 else (0.0 if along == 0 else float("inf"))
    return Finding(output, alignment, missing, int(error.numel()))


# What each check changed, how it names itself, and what a kernel writer does about each finding.
CHECKS: dict[str, dict[str, str]] = {
    "inputs": {
        "name": "low-bit response check",
        "changed": "when only the inputs' mantissa bits below TF32's, fp16's and bf16's precision were changed",
        "missed": "the kernel rounds its fp32 inputs to fewer mantissa bits before using them, which a measured bias "
        "correction does not undo; compute with fp32 operands (splitting each into a TF32 high and low part, "
        "3xTF32, keeps the low bits and is fine)",
        "more": "the kernel uses bits the reference's own computation drops (a cast of an input to fp16 or bf16 in "
        "the task, for instance); keep the task's casts",
    },
    "weights": {
        "name": "weight response check",
        "changed": "between two loads of the model whose parameters differ only in their mantissa bits 0-5",
        "missed": "the kernel stores or uses the model's fp32 parameters in fewer mantissa bits (a packed or rounded "
        "copy made at load or in forward), which a bias correction does not undo; keep parameters in fp32 "
        "(pre-transposed or re-laid-out copies are fine; each ModelNew must use its own parameters)",
        "more": "the kernel uses parameter bits the reference's own computation drops (a cast of a weight to fp16 "
        "or bf16 in the task, for instance); keep the task's casts",
    },
}


def reason(found: Finding, check: str = "inputs") -> str:
    """What was found and what a kernel writer can do: too little response (operands rounded), or too much
    (bits the reference's own computation drops, such as a cast to fp16, were used)."""
    said = CHECKS[check]
    setup = (
        f"{said['changed']} (alignment {found.alignment:.1f} with a secret direction over {found.elements} "
        f"elements, where honest rounding noise stays below {ALIGNMENT:g})"
    )
    if found.missing < 0:
        share = "all" if found.missing <= -0.995 else f"{min(-found.missing, 1.0):.0%}"
        return f"{said['name']}: output {found.output} missed {share} of the change of the exact value {setup}: {said['missed']}"
    return (
        f"{said['name']}: output {found.output} changed {min(found.missing, 99.0):.2g} times more than the exact "
        f"value {setup}: {said['more']}"
    )


@dataclass
class Pair:
    """The trusted state of one judgment's check: the two changed input sets, the reference's outputs and
    truths on each, the output weights, and what the current candidate returned for the first."""

    inputs: tuple[list[Any], list[Any]]
    expected: tuple[list[torch.Tensor], list[torch.Tensor]]
    truths: tuple[list[Any], list[Any]]
    weights: list[torch.Tensor | None]
    prints: tuple[str, str]
    aliases: tuple[list[list[str]], list[list[str]]]
    received: dict[int, list[torch.Tensor]] = field(default_factory=dict)

    def findings(self) -> list[Finding]:
        """Every floating output's response (the candidate's two outputs are both in)."""
        return responses(self.received[0], self.received[1], self.truths[0], self.truths[1], self.weights)


@dataclass
class WeightPair:
    """The weight pair (docs/design/precision.md): changed set B run again by a second ModelNew whose
    parameters differ from the loaded ones only in bits below `WEIGHT_BITS`. `state` is that second point
    (the moved parameters by name); `expected`, `truths` and `aliases` are the reference's on B there, and
    `first` what the current candidate returned for B with the parameters it loaded."""

    state: dict[str, torch.Tensor]
    expected: list[torch.Tensor]
    truths: list[Any]
    aliases: list[list[str]]
    alternatives: Any = None
    first: list[torch.Tensor] | None = None


def responses(up: list[torch.Tensor], down: list[torch.Tensor], truths_up: list[Any], truths_down: list[Any],
              weights: list[torch.Tensor | None]) -> list[Finding]:  # fmt: skip
    """Every floating output's response: the candidate's outputs at the two points against the truths there."""
    found = []
    for k, w in enumerate(weights):
        t_up, t_down = truths_up[k], truths_down[k]
        if w is None or t_up is None or t_down is None or k >= len(up) or k >= len(down):
            continue
        if up[k].shape != w.shape or down[k].shape != w.shape or t_up.rows != t_down.rows:
            continue  # a wrong shape is refused by each set's comparison; blocks must be the same rows
        got_up, got_down, weighed = up[k], down[k], w
        if t_up.rows is not None:  # truths of a block of the batch (truth_rows.py): its rows only
            start, stop = t_up.rows
            got_up, got_down, weighed = got_up[start:stop], got_down[start:stop], weighed[start:stop]
        found.append(respond(got_up, got_down, t_up.value, t_down.value, weighed, k))
    return found
