"""Trusted side: the truth's rules for pointwise ops, and for ops with no rule at all (`generic`).

- **pointwise ops**: the result rounded to its dtype (k u_out |y|, k = 0 for exact ops such as relu or
  max, 1 for arithmetic and square roots, 4 for transcendental functions, which fast-math intrinsics compute
  in a few ulps) plus the input errors propagated. Propagation is by finite differences over a radius of
  R standard errors (not derivatives), so a kink (relu near 0, clamp) or a jump (floor, sign) within the
  error is seen; each input is also taken as perturbed by one rounding of its own dtype (rho u |x|, rho = 2
  for transcendental functions, whose argument reduction costs that much), which covers the honest
  rewrites (x / s as x * (1 / s), a*b + c fused or not, exp as exp2(x log2 e), fp16 tasks computed in
  half2 arithmetic).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from cuda_agent.judge.trusted.tracked import (
    Tracked,
    payload,
    var_of,
)
from cuda_agent.judge.trusted.truth_ops import (
    FLIP_SEED,
    RADIUS,
    accumulated,
    add_terms,
    call_payload,
    decision_flips,
    finite,
    inputs_unknowable,
    local_rounding,
    mark_unknowable,
    nominal_dtypes,
    op_name,
    own_rounding,
    with_spread,
    wrap_outputs,
)

# Pointwise ops: (k, rho): the op's own error in units of its output's roundoff, and the input rounding
# in units of each input's roundoff (see the module docstring). Ops not listed: TRANSCENDENTAL.
EXACT_POINTWISE = (0.0, 1.0)
ARITHMETIC = (1.0, 1.0)
TRANSCENDENTAL = (4.0, 2.0)
POINTWISE_ERROR: dict[str, tuple[float, float]] = {
    **{name: EXACT_POINTWISE for name in (
        "abs", "neg", "relu", "clamp", "clamp_min", "clamp_max", "maximum", "minimum", "fmax", "fmin", "where",
        "masked_fill", "sign", "sgn", "floor", "ceil", "round", "trunc", "hardtanh", "threshold", "heaviside",
        "nan_to_num", "copysign", "positive", "signbit", "fill", "relu6", "isnan", "isinf", "isfinite",
        "logical_not", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
        "bitwise_not", "eq", "ne", "lt", "le", "gt", "ge", "clone", "alias", "lift_fresh",
    )},
    **{name: ARITHMETIC for name in (
        "add", "sub", "rsub", "mul", "square", "sqrt", "addcmul", "lerp", "fmod", "remainder", "hypot",
        "leaky_relu", "hardsigmoid", "hardswish", "frac", "floor_divide", "true_divide",
    )},
    # Two ulps: __fdividef, the approximate reciprocal and reciprocal square root of fast math.
    **{name: (2.0, 1.0) for name in ("div", "reciprocal", "rsqrt", "addcdiv")},
    # Periodic functions are compared at least at the scale of their range: sin.approx has an absolute error.
}
# Functions whose usual float32 forms cancel: their error is u times a scale of their own, not u |y|.
# gelu is x * Phi(x) with Phi = (1 + erf) / 2: for negative x, 1 + erf loses its digits, so every honest
# kernel (PyTorch's own too) is off by about u |x| / 2 where |y| is far smaller; exp(x) - 1 in the ELU
# family, log(1 + exp(x)) in softplus, (e^2x - 1) / (e^2x + 1) for tanh near 0 and the argument reduction
# of sin/cos/tan (sin.approx has an absolute error) likewise have an absolute error at the scale given.
OUTPUT_SCALE: dict[str, Callable[[torch.Tensor], Any]] = {
    "gelu": lambda x: 0.5 * x.abs(),
    "mish": lambda x: x.abs(),
    "elu": lambda x: 1.0, "selu": lambda x: 1.76, "celu": lambda x: 1.0,
    "softplus": lambda x: 1.0, "log_sigmoid_forward": lambda x: 1.0,
    "tanh": lambda x: 1.0, "sin": lambda x: 1.0, "cos": lambda x: 1.0, "tan": lambda x: 1.0,
}  # fmt: skip


# ---- pointwise ------------------------------------------------------------------------------------------
def pointwise(func: Any, args: Any, kwargs: Any) -> Any:
    flat, _ = tree_flatten((args, kwargs))
    y = call_payload(func, args, kwargs)
    if not isinstance(y, torch.Tensor):
        return y
    dtype = nominal_dtypes(func, args, kwargs, y)[0]
    unsure = inputs_unknowable(flat, y.shape)
    floats = [i for i, a in enumerate(flat) if isinstance(a, Tracked) and a.is_floating_point()]
    k, rho = POINTWISE_ERROR.get(op_name(func), TRANSCENDENTAL)
    spreads = {}
    for i in floats:
        a = flat[i]
        own = own_rounding(a.value, a.dtype, rho)
        var = var_of(a)
        spreads[i] = torch.sqrt(own if var is None else own + finite(var))
    if not y.is_floating_point():  # a decision: exact unless it flips within the error
        flips = decision_flips(func, args, kwargs, y, spreads)
        bad = add_terms(*(t for t in (unsure, flips) if t is not None))
        return Tracked.make(y, dtype, None if bad is None else torch.where(bad, math.inf, 0.0).to(torch.float64))
    scale = OUTPUT_SCALE.get(op_name(func))
    floor = scale(payload(args[0]).abs()) if scale is not None and isinstance(payload(args[0]), torch.Tensor) else 0.0
    var = local_rounding(y, dtype, k, floor)
    slopes = _slopes(func, args, kwargs)
    for i, spread in spreads.items():
        if slopes is not None:  # arithmetic: first order is exact enough, no finite differences needed
            var = var + (slopes.get(i, 0.0) * spread) ** 2
            continue
        if not bool((spread > 0).any()):
            continue
        h = RADIUS * spread
        up = call_payload(func, args, kwargs, {i: flat[i].value + h})
        down = call_payload(func, args, kwargs, {i: flat[i].value - h})
        moved = torch.maximum(_moved(up, y), _moved(down, y)) / RADIUS
        var = var + torch.nan_to_num(moved * moved, nan=math.inf)
    return Tracked.make(y, dtype, mark_unknowable(var, unsure))


def _slopes(func: Any, args: Any, kwargs: Any) -> dict[int, Any] | None:
    """|dy/dx| of add, sub, rsub, mul, neg and true division, by position among the op's first two
    arguments (None for every other op: finite differences). A denominator within RADIUS standard
    errors of zero still goes by finite differences, which see the pole."""
    name = op_name(func)
    if name not in ("add", "sub", "rsub", "mul", "neg", "div") or func._overloadname.endswith("mode"):
        return None
    alpha = abs(float(kwargs.get("alpha", args[2] if len(args) > 2 and name != "div" else 1.0)))
    if name == "neg":
        return {0: 1.0}
    if name in ("add", "sub"):
        return {0: 1.0, 1: alpha}
    if name == "rsub":
        return {0: alpha, 1: 1.0}
    a, b = payload(args[0]), payload(args[1])
    if name == "mul":
        return {0: b.abs() if isinstance(b, torch.Tensor) else abs(float(b)), 1: a.abs()}
    if isinstance(b, torch.Tensor):
        spread = with_spread(args[1]) if isinstance(args[1], Tracked) else torch.zeros_like(b)
        if bool((b.abs() <= RADIUS * spread).any()):
            return None
        return {0: 1.0 / b.abs(), 1: (a / (b * b)).abs()}
    return {0: 1.0 / abs(float(b))}


def _moved(other: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """|other - y|, 0 where both are the same infinity (a masked -inf stays -inf), +inf where a
    perturbation leaves or enters the function's domain."""
    return torch.where(other == y, 0.0, torch.nan_to_num((other - y).abs(), nan=math.inf))


# ---- ops without a rule ---------------------------------------------------------------------------------
def generic(func: Any, args: Any, kwargs: Any) -> Any:
    """An op no rule covers: the input errors propagated by two random perturbations of RADIUS standard
    errors (every floating input at once), and the op's own error taken as a float32 sum over as many
    terms as it has inputs per output element."""
    flat, _ = tree_flatten((args, kwargs))
    out = call_payload(func, args, kwargs)
    flat_out, _ = tree_flatten(out)
    tensors = [o for o in flat_out if isinstance(o, torch.Tensor)]
    floats = [i for i, a in enumerate(flat) if isinstance(a, Tracked) and a.is_floating_point()]
    spreads = {i: with_spread(flat[i]) for i in floats}
    gen = torch.Generator(device=tensors[0].device if tensors else "cpu").manual_seed(FLIP_SEED)
    moved: list[torch.Tensor | None] = [None] * len(tensors)
    for _ in range(2):
        change = {
            i: flat[i].value + RADIUS * s * (torch.randint(0, 2, s.shape, generator=gen, device=s.device) * 2 - 1)
            for i, s in spreads.items()
        }  # fmt: skip
        other = [o for o in tree_flatten(call_payload(func, args, kwargs, change))[0] if isinstance(o, torch.Tensor)]
        for j, (o, t) in enumerate(zip(other, tensors, strict=True)):
            if t.is_floating_point() and o.shape == t.shape:
                d = ((o - t) / RADIUS) ** 2
                moved[j] = d if moved[j] is None else torch.maximum(moved[j], d)
    numel_in = max([flat[i].numel() for i in floats], default=1)
    dtypes = nominal_dtypes(func, args, kwargs, out)
    variances: list[torch.Tensor | None] = []
    for t, d, dtype in zip(tensors, moved, dtypes, strict=False):
        if not t.is_floating_point():
            variances.append(None)
            continue
        count = max(1.0, numel_in / max(1, t.numel()))
        own = accumulated(t, t * t * count, count, dtype)
        variances.append(own if d is None else own + torch.nan_to_num(d, nan=math.inf))
    flat_o, spec_o = tree_flatten(out)
    converted = [o.to(torch.float64) if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in flat_o]
    return wrap_outputs(func, args, kwargs, tree_unflatten(converted, spec_o), variances)
