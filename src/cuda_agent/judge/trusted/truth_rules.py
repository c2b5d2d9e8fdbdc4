"""Trusted side: how each op moves a tracked tensor's exact value and its honest error (tracked.py).

Each rule computes the op on float64 payloads and the variance of the error an honest kernel computing the
op in the task's precision can have: the error its inputs already carry, propagated, plus the op's own.
The families, and why their own error is what it is (u is the unit roundoff of the dtype named):

- **reductions and products** (sums, means, matmuls, convolutions, average pools): a sum of K terms
  accumulated in float32 (in float64 for float64 tasks) in any order a kernel may choose. The worst honest
  order is the plain running sum (one thread's loop, a tiled GEMM's K loop, FMA or not): its partial sums
  s_k drift toward y and wander like a random walk, each rounded by up to u|s_k|, so its error has
  variance about u^2 K (y^2/3 + M2/6), M2 being the sum of the terms' squares (the first part is the
  drift, the second the walk's bridge), plus u^2 M2 for rounding the products themselves. Split-K, trees,
  Welford, Kahan and blocked orders have less. Lowered precision has more: TF32 or fp16/bf16 operands add
  about u_low^2 M2 (u_low = 2^-11 or 2^-8, against u = 2^-24), a half-precision accumulator u_low^2 K M2,
  weights cut to 15 mantissa bits 2^-32 (y^2 + M2/3). The errors of the inputs propagate as f(var_x, w^2)
  (independent errors add in variance), and the result is rounded to its dtype (u_out^2 y^2).
- **pointwise ops**: the result rounded to its dtype (k u_out |y|, k = 0 for exact ops such as relu or
  max, 1 for arithmetic and square roots, 4 for transcendental functions, which fast-math intrinsics compute
  in a few ulps) plus the input errors propagated. Propagation is by finite differences over a radius of
  R standard errors (not derivatives), so a kink (relu near 0, clamp) or a jump (floor, sign) within the
  error is seen; each input is also taken as perturbed by one rounding of its own dtype (rho u |x|, rho = 2
  for transcendental functions, whose argument reduction costs that much), which covers the honest
  rewrites (x / s as x * (1 / s), a*b + c fused or not, exp as exp2(x log2 e), fp16 tasks computed in
  half2 arithmetic).
- **decisions** (comparisons, argmax, sort and top-k indices, casts to integers): exact, but an element
  whose decision flips when its inputs move by R standard errors is marked unknowable (variance +inf) and
  so is everything computed from it: the audit leaves those elements out rather than refuse a kernel
  whose argmax went the other way on a near tie.
- **selections and data movement** (views, copies, cat, pads, gathers, max and max-pools): exact; the
  variance moves with the data (a max takes the largest variance of its window).
- **casts**: to fp16/bf16/fp8 a rounding the task asks for, kept in the value; where the rounded value
  carries an error s, the candidate's may land on the other side of a rounding boundary (one ulp, with
  probability about s / ulp), which adds s * ulp to the variance; to float32 or float64 nothing.

Ops with no rule here are decomposed by PyTorch's decompositions (softmax, layer norm, group norm, batch
norm, variance, ...) into ops that have one (truth.py). An op with neither gets `generic`: its input errors
propagated by random perturbations, its own error taken as that of a reduction over its inputs, and its
name reported with the truth (`unmodelled`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from cuda_agent.judge.trusted.tracked import (
    LOW_PRECISION,
    Tracked,
    Untrackable,
    accumulation_roundoff,
    is_float,
    payload,
    round_to,
    roundoff,
    var_of,
)

aten = torch.ops.aten

# Finite differences and the flip test look this many standard errors away from the exact value.
RADIUS = 4.0
# Round-to-nearest errors are uniform within half an ulp: their root mean square is about 0.42 u |s| over
# the magnitudes s takes (u |s| / sqrt(3) at a power of two, half that below the next one). 0.5 keeps a
# margin; measured: an honest running sum's statistic is about 0.8 with it (benchmarks/precision_audit.py).
ROUNDING_RMS = 0.5
# Random perturbations (besides one input at a time, both ways) that look for a decision within the error.
FLIP_DRAWS = 2
FLIP_SEED = 20261203

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


def _name(func: Any) -> str:
    return func.overloadpacket.__name__.rstrip("_") if hasattr(func, "overloadpacket") else str(func)


# ---- nominal dtypes ----------------------------------------------------------------------------------
def _meta(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="meta")
    return a


# Output dtypes by op and argument kinds: type promotion depends on the inputs' dtypes, whether they are
# 0-dim, the Python types of scalars and the values of dtype, bool and string arguments, never on sizes.
_NOMINAL: dict[Any, list[torch.dtype]] = {}


def _dtype_key(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return (a.dtype, a.dim() == 0)
    if isinstance(a, bool | str | torch.dtype) or a is None:
        return a
    return type(a)


def nominal_dtypes(func: Any, args: Any, kwargs: Any, out: Any) -> list[torch.dtype]:
    """The dtypes the reference's own op returns (its outputs flattened): the op run on meta tensors of
    the nominal dtypes; where it has no meta kernel, type promotion of the floating inputs."""
    flat_out, _ = tree_flatten(out)
    count = sum(isinstance(o, torch.Tensor) for o in flat_out)
    key = (func, tuple(_dtype_key(a) for a in tree_flatten((args, kwargs))[0]))
    known = _NOMINAL.get(key)
    if known is not None and len(known) == count:
        return known
    try:
        made, _ = tree_flatten(func(*tree_map(_meta, args), **tree_map(_meta, kwargs)))
        dtypes = [m.dtype for m in made if isinstance(m, torch.Tensor)]
        if len(dtypes) == count:
            if len(_NOMINAL) < 4096:
                _NOMINAL[key] = dtypes
            return dtypes
    except Exception:
        pass
    floats = [a.dtype for a in tree_flatten((args, kwargs))[0] if is_float(a)]
    asked = kwargs.get("dtype")
    promoted = asked if isinstance(asked, torch.dtype) else None
    for d in floats:
        promoted = d if promoted is None else torch.promote_types(promoted, d)
    fallback = promoted or torch.get_default_dtype()
    return [fallback if o.is_floating_point() else o.dtype for o in flat_out if isinstance(o, torch.Tensor)]


# ---- calling an op on payloads ---------------------------------------------------------------------------
def call_payload(func: Any, args: Any, kwargs: Any, replace: dict[int, Any] | None = None) -> Any:
    """The op on float64 payloads. A floating `dtype=` argument becomes float64; one naming fp16/bf16
    first rounds the floating inputs to it (the op is defined on the rounded inputs). `replace` maps
    positions of the flattened (args, kwargs) to other payloads (perturbed inputs)."""
    flat, spec = tree_flatten((args, kwargs))
    asked = kwargs.get("dtype")
    low = asked if asked in LOW_PRECISION else None
    values = []
    for i, a in enumerate(flat):
        v = replace[i] if replace is not None and i in replace else payload(a)
        if low is not None and is_float(v) and isinstance(a, Tracked):
            v = round_to(v, low)
        values.append(v)
    args2, kwargs2 = tree_unflatten(values, spec)
    if isinstance(asked, torch.dtype) and asked.is_floating_point:
        kwargs2 = {**kwargs2, "dtype": torch.float64}
    return func(*args2, **kwargs2)


def _sq(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t * t


def _finite(var: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isinf(var), torch.zeros_like(var), var)


def _unsure(var: torch.Tensor | None) -> torch.Tensor | None:
    if var is None:
        return None
    bad = torch.isinf(var)
    return bad if bool(bad.any()) else None


def _add(*terms: torch.Tensor | None) -> torch.Tensor | None:
    total = None
    for t in terms:
        if t is not None:
            total = t if total is None else total + t
    return total


def _mark(var: torch.Tensor, unsure: torch.Tensor | None) -> torch.Tensor:
    return var if unsure is None else torch.where(unsure, math.inf, var)


def _inputs_unsure(flat: Sequence[Any], shape: torch.Size) -> torch.Tensor | None:
    """Where any tracked input (broadcast to `shape`) is unknowable."""
    found = None
    for a in flat:
        bad = _unsure(var_of(a))
        if bad is not None:
            try:
                bad = torch.broadcast_to(bad, shape)
            except RuntimeError:
                bad = torch.ones(shape, dtype=torch.bool, device=bad.device)  # not elementwise: all of it
            found = bad if found is None else found | bad
    return found


def _local_rounding(y: torch.Tensor, nominal: torch.dtype, k: float = 1.0, scale: Any = 0.0) -> torch.Tensor:
    """(k u |y|)^2, |y| taken at least `scale` (a number or a tensor broadcast to y)."""
    u = roundoff(nominal) * k
    mag = y.abs() if isinstance(scale, float) and scale == 0.0 else torch.maximum(y.abs(), torch.as_tensor(scale, dtype=y.dtype, device=y.device))
    return torch.where(torch.isfinite(y), (u * mag) ** 2, 0.0)  # an infinite result is exactly that


def _wrap(func: Any, args: Any, kwargs: Any, out: Any, variances: list[torch.Tensor | None]) -> Any:
    """The op's payload outputs as Tracked tensors of the reference's dtypes, with their variances."""
    flat_out, spec = tree_flatten(out)
    dtypes = iter(nominal_dtypes(func, args, kwargs, out))
    var_iter = iter(variances)
    wrapped = []
    for o in flat_out:
        if isinstance(o, torch.Tensor):
            wrapped.append(Tracked.make(o, next(dtypes), next(var_iter, None)))
        else:
            wrapped.append(o)
    return tree_unflatten(wrapped, spec)


# ---- pointwise ------------------------------------------------------------------------------------------
def pointwise(func: Any, args: Any, kwargs: Any) -> Any:
    flat, _ = tree_flatten((args, kwargs))
    y = call_payload(func, args, kwargs)
    if not isinstance(y, torch.Tensor):
        return y
    dtype = nominal_dtypes(func, args, kwargs, y)[0]
    unsure = _inputs_unsure(flat, y.shape)
    floats = [i for i, a in enumerate(flat) if isinstance(a, Tracked) and a.is_floating_point()]
    k, rho = POINTWISE_ERROR.get(_name(func), TRANSCENDENTAL)
    spreads = {}
    for i in floats:
        a = flat[i]
        own = _own_rounding(a.value, a.dtype, rho)
        var = var_of(a)
        spreads[i] = torch.sqrt(own if var is None else own + _finite(var))
    if not y.is_floating_point():  # a decision: exact unless it flips within the error
        flips = _flips(func, args, kwargs, y, spreads)
        bad = _add(*(t for t in (unsure, flips) if t is not None))
        return Tracked.make(y, dtype, None if bad is None else torch.where(bad, math.inf, 0.0).to(torch.float64))
    scale = OUTPUT_SCALE.get(_name(func))
    floor = scale(payload(args[0]).abs()) if scale is not None and isinstance(payload(args[0]), torch.Tensor) else 0.0
    var = _local_rounding(y, dtype, k, floor)
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
    return Tracked.make(y, dtype, _mark(var, unsure))


def _slopes(func: Any, args: Any, kwargs: Any) -> dict[int, Any] | None:
    """|dy/dx| of add, sub, rsub, mul, neg and true division, by position among the op's first two
    arguments (None for every other op: finite differences). A denominator within RADIUS standard
    errors of zero still goes by finite differences, which see the pole."""
    name = _name(func)
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
        spread = _with_spread(args[1]) if isinstance(args[1], Tracked) else torch.zeros_like(b)
        if bool((b.abs() <= RADIUS * spread).any()):
            return None
        return {0: 1.0 / b.abs(), 1: (a / (b * b)).abs()}
    return {0: 1.0 / abs(float(b))}


def _moved(other: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """|other - y|, 0 where both are the same infinity (a masked -inf stays -inf), +inf where a
    perturbation leaves or enters the function's domain."""
    return torch.where(other == y, 0.0, torch.nan_to_num((other - y).abs(), nan=math.inf))


def _flips(func: Any, args: Any, kwargs: Any, y: torch.Tensor, spreads: dict[int, torch.Tensor]) -> torch.Tensor | None:
    """Where the op's (non-floating) result changes when its floating inputs move by up to RADIUS
    standard errors: one input at a time both ways, then all of them at random."""
    if not spreads:
        return None
    flat, _ = tree_flatten((args, kwargs))
    flips = torch.zeros(y.shape, dtype=torch.bool, device=y.device)
    trials: list[dict[int, Any]] = []
    for i, s in spreads.items():
        trials += [{i: flat[i].value + RADIUS * s}, {i: flat[i].value - RADIUS * s}]
    gen = torch.Generator(device=y.device).manual_seed(FLIP_SEED)
    for _ in range(FLIP_DRAWS if len(spreads) > 1 else 0):
        trials.append({
            i: flat[i].value + RADIUS * s * (torch.randint(0, 2, s.shape, generator=gen, device=s.device) * 2 - 1)
            for i, s in spreads.items()
        })  # fmt: skip
    for change in trials:
        other = call_payload(func, args, kwargs, change)
        flips |= torch.broadcast_to(other != y, y.shape)
    return flips if bool(flips.any()) else None


# ---- sums, products, convolutions -----------------------------------------------------------------------
def accumulated(y: torch.Tensor, m2: torch.Tensor, count: float | torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The own error variance of a sum of `count` terms (module docstring): running-sum drift and walk in
    the accumulation precision, the products' rounding, the result's rounding to its dtype."""
    u = accumulation_roundoff(dtype) * ROUNDING_RMS
    return u * u * (count * (y * y / 3 + m2 / 6) + m2) + _local_rounding(y, dtype)


def flip_variance(value: torch.Tensor, var: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """The variance a rounding to a low dtype adds when its input carries an error of standard deviation
    s: the result moves by one ulp (2 u |v|) where the input crosses a rounding boundary, which happens
    with probability about s / ulp, so s * ulp (at most ulp^2). An exact input (an input, a weight) rounds
    the same in every kernel: nothing."""
    if var is None:
        return None
    ulp = 2 * roundoff(dtype) * value.abs()
    return var + torch.minimum(torch.sqrt(_finite(var)), ulp) * ulp


# Sums of squares and propagated variances only set the allowance, which needs two digits: on a GPU they are
# computed with bf16 operands and float32 accumulation (tensor cores, an order of magnitude faster than the
# float64 product the value needs), where the operands fit bf16's range. `None`: float64 everywhere.
MAGNITUDE_DTYPE: dict[str, torch.dtype | None] = {"cuda": torch.bfloat16, "cpu": None}
_BF16_SAFE = 1e30


def magnitudes(f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """f(x, w) for nonnegative x and w (squares, variances), in float64, computed in a low precision
    where that is only faster (MAGNITUDE_DTYPE)."""
    low = MAGNITUDE_DTYPE.get(x.device.type)
    if low is None or x.numel() == 0 or w.numel() == 0:
        return f(x, w)
    if float(torch.maximum(x.max(), w.max())) > _BF16_SAFE:
        return f(x, w)
    return f(x.to(low), w.to(low)).to(torch.float64)


class _Shaped:
    """A payload and variance broadcast to an output's shape (a bias joining a sum)."""

    def __init__(self, value: torch.Tensor, var: torch.Tensor | None) -> None:
        self.value, self.var = value, var


def _products(
    y: torch.Tensor, dtype: torch.dtype, f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], a: Any, b: Any,
    count: float, bias: _Shaped | None = None, beta: float = 1.0, alpha: float = 1.0,
) -> Tracked:  # fmt: skip
    """The result y = beta * bias + alpha * f(a, b) of an op that is a sum over products of two tensors
    (mm, bmm, convolution, ...): f applied to the squares gives M2, applied to an input's variance and the
    other's square the propagated error; `bias` (broadcast to y) is one more term of the sum."""
    va, vb = payload(a), payload(b)
    sa, sb = va * va, vb * vb
    m2 = magnitudes(f, sa, sb)
    var_a, var_b = var_of(a), var_of(b)
    prop = _add(
        None if var_a is None else magnitudes(f, _finite(var_a), sb),
        None if var_b is None else magnitudes(f, sa, _finite(var_b)),
    )
    unsure = None
    bad_a, bad_b = _unsure(var_a), _unsure(var_b)
    if bad_a is not None:
        unsure = f(bad_a.to(torch.float64), vb.abs() + 1) > 0
    if bad_b is not None:
        hit = f(va.abs() + 1, bad_b.to(torch.float64)) > 0
        unsure = hit if unsure is None else unsure | hit
    if alpha != 1.0:
        m2, prop = alpha * alpha * m2, None if prop is None else alpha * alpha * prop
    if bias is not None:
        m2 = m2 + beta * beta * bias.value * bias.value
        var_bias = bias.var
        if var_bias is not None:
            prop = _add(prop, beta * beta * _finite(var_bias))
            bad = _unsure(var_bias)
            if bad is not None:
                unsure = bad if unsure is None else unsure | bad
        count += 1
    var = accumulated(y, m2, count, dtype)
    if prop is not None:
        var = var + prop
    return Tracked.make(y, dtype, var if unsure is None else _mark(var, unsure))


def matmul_family(func: Any, args: Any, kwargs: Any) -> Any:
    """mm, bmm, mv, dot and their forms with an added tensor (addmm, baddbmm, addmv, addbmm, addr)."""
    name = _name(func)
    y = call_payload(func, args, kwargs)
    dtype = nominal_dtypes(func, args, kwargs, y)[0]
    if name in ("mm", "bmm", "mv", "dot", "vdot"):
        return _products(y, dtype, lambda x, w: func(x, w), args[0], args[1], float(payload(args[0]).shape[-1]))
    if name in ("addmm", "baddbmm", "addmv", "addbmm", "addr"):
        beta, alpha = float(kwargs.get("beta", 1.0)), float(kwargs.get("alpha", 1.0))
        a = payload(args[1])
        count = 1.0 if name == "addr" else float(a.shape[-1]) * (a.shape[0] if name == "addbmm" else 1)
        product = {"addmm": aten.mm.default, "baddbmm": aten.bmm.default, "addmv": aten.mv.default,
                   "addr": aten.outer.default}.get(name)  # fmt: skip
        if name == "addbmm":
            def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
                return aten.bmm.default(x, w).sum(0)
        else:
            assert product is not None

            def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
                return product(x, w)
        return _products(y, dtype, f, args[1], args[2], count, _broadcast(args[0], y.shape), beta, alpha)
    raise Untrackable(f"no matmul rule for {func}")


def _broadcast(t: Any, shape: torch.Size, view: list[int] | None = None) -> _Shaped | None:
    if t is None:
        return None
    value = payload(t)
    var = var_of(t)
    if view is not None:
        value = value.reshape(view)
        var = None if var is None else var.reshape(view)
    value = torch.broadcast_to(value, shape)
    return _Shaped(value, None if var is None else torch.broadcast_to(var, shape))


def convolution(func: Any, args: Any, kwargs: Any) -> Any:
    """aten.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)."""
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "transposed", "output_padding", "groups")
    full = dict(zip(names, args, strict=False)) | dict(kwargs)
    w = payload(full["weight"])
    groups = int(full.get("groups") or 1)
    window = math.prod(w.shape[2:])
    if full.get("transposed"):  # weight is (C_in, C_out / groups, ...); a stride spreads the window
        count = w.shape[0] / groups * max(1.0, window / math.prod(full.get("stride") or [1]))
    else:
        count = w.shape[1] * window
    y = call_payload(func, args, kwargs)
    dtype = nominal_dtypes(func, args, kwargs, y)[0]
    rest = {k: v for k, v in full.items() if k not in ("input", "weight", "bias")}

    def f(x: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return aten.convolution.default(x, k, None, **rest)

    bias = full.get("bias")
    shaped = None if bias is None else _broadcast(bias, y.shape, [1, -1] + [1] * (y.dim() - 2))
    return _products(y, dtype, f, full["input"], full["weight"], float(count), shaped)


def _dims(x: torch.Tensor, dim: Any) -> list[int]:
    if dim is None or (isinstance(dim, list | tuple) and len(dim) == 0):
        return list(range(x.dim()))
    if isinstance(dim, int):
        return [dim % max(1, x.dim())]
    return [d % max(1, x.dim()) for d in dim]


def reduction(func: Any, args: Any, kwargs: Any) -> Any:
    """sum and mean (over dims or all): accumulated sums."""
    x = args[0]
    v = payload(x)
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    keepdim = bool(args[2]) if len(args) > 2 else bool(kwargs.get("keepdim", False))
    y = call_payload(func, args, kwargs)
    dtype = nominal_dtypes(func, args, kwargs, y)[0]
    if not y.is_floating_point():
        return _wrap(func, args, kwargs, y, [None])
    dims = _dims(v, dim)
    count = float(math.prod(v.shape[d] for d in dims)) if v.dim() else 1.0
    mean = _name(func) in ("mean", "nanmean")
    scale = 1.0 / count if mean else 1.0
    vv = v.to(torch.float64) if not v.is_floating_point() else v
    s = y / scale
    m2 = torch.sum(vv * vv, dim=dims, keepdim=keepdim) if v.dim() else vv * vv
    var = accumulated(s, m2, count, dtype) * scale * scale + _local_rounding(y, dtype)
    var_x = var_of(x)
    if var_x is not None and v.is_floating_point():
        var = var + torch.sum(_finite(var_x), dim=dims, keepdim=keepdim) * scale * scale
        bad = _unsure(var_x)
        if bad is not None:
            var = _mark(var, torch.any(bad, dim=dims, keepdim=keepdim) if v.dim() else bad)
    return Tracked.make(y, dtype, var)


def cumsum(func: Any, args: Any, kwargs: Any) -> Any:
    x = args[0]
    dim = args[1] if len(args) > 1 else kwargs["dim"]
    v = payload(x)
    y = call_payload(func, args, kwargs)
    dtype = nominal_dtypes(func, args, kwargs, y)[0]
    dim = dim % max(1, v.dim())
    shape = [1] * v.dim()
    shape[dim] = v.shape[dim]
    count = torch.arange(1, v.shape[dim] + 1, device=v.device, dtype=torch.float64).reshape(shape)
    var = accumulated(y, torch.cumsum(v * v, dim), count, dtype)
    if var_of(x) is not None:
        var = var + torch.cumsum(_finite(var_of(x)), dim)
        bad = _unsure(var_of(x))
        if bad is not None:
            var = _mark(var, torch.cumsum(bad.to(torch.int32), dim) > 0)
    return Tracked.make(y, dtype, var)


def avg_pool(func: Any, args: Any, kwargs: Any) -> Any:
    """avg_poolNd(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override): a mean
    over each window (the same op applied to squares and variances)."""
    x = args[0]
    v = payload(x)
    kernel = args[1]
    window = float(math.prod(kernel if isinstance(kernel, list | tuple) else [kernel]))
    y = call_payload(func, args, kwargs)
    dtype = nominal_dtypes(func, args, kwargs, y)[0]
    rest = list(args[1:])

    def pool(t: torch.Tensor) -> torch.Tensor:
        return func(t, *rest, **kwargs)

    m2 = pool(v * v) * window  # sum of squares = window x their mean
    var = accumulated(y * window, m2, window, dtype) / (window * window) + _local_rounding(y, dtype)
    if var_of(x) is not None:
        var = var + pool(_finite(var_of(x))) / window
        bad = _unsure(var_of(x))
        if bad is not None:
            var = _mark(var, pool(bad.to(torch.float64)) > 0)
    return Tracked.make(y, dtype, var)


# ---- selections, decisions ------------------------------------------------------------------------------
def _own_rounding(value: torch.Tensor, dtype: torch.dtype, rho: float = 1.0) -> torch.Tensor:
    """(rho u |v|)^2: one more rounding of an input in its own dtype (0 at infinities: they stay)."""
    return torch.where(torch.isfinite(value), (rho * roundoff(dtype) * value.abs()) ** 2, 0.0)


def _with_spread(a: Tracked) -> torch.Tensor:
    own = _own_rounding(a.value, a.dtype)
    var = a.var
    return torch.sqrt(own if var is None else own + _finite(var))


def index_flips(func: Any, args: Any, kwargs: Any, indices: torch.Tensor, pick: Callable[[Any], torch.Tensor]) -> torch.Tensor | None:
    """Where an index result (argmax, sort order, top-k) changes when the input moves by up to RADIUS
    standard errors at random (FLIP_DRAWS + 2 draws, both signs)."""
    x = args[0]
    spread = _with_spread(x)
    if not bool((spread > 0).any()):
        return None
    gen = torch.Generator(device=spread.device).manual_seed(FLIP_SEED)
    flips = torch.zeros(indices.shape, dtype=torch.bool, device=indices.device)
    for _ in range(FLIP_DRAWS + 2):
        signs = torch.randint(0, 2, spread.shape, generator=gen, device=spread.device) * 2 - 1
        other = pick(call_payload(func, args, kwargs, {0: x.value + RADIUS * spread * signs}))
        flips |= other != indices
    return flips if bool(flips.any()) else None


def _index_tracked(idx: torch.Tensor, flips: torch.Tensor | None, inherited: torch.Tensor | None) -> Tracked:
    bad = flips if inherited is None else (inherited if flips is None else flips | inherited)
    return Tracked.make(idx, idx.dtype, None if bad is None else torch.where(bad, math.inf, 0.0).to(torch.float64))


def _spread_keeping_unknowable(a: Any) -> torch.Tensor:
    """Standard error (with one rounding of the input's own dtype) per element, +inf where unknowable."""
    value = payload(a)
    own = _own_rounding(value, a.dtype)
    var = var_of(a)
    return torch.sqrt(own if var is None else own + var)


def ordered_near_ties(v: torch.Tensor, spread: torch.Tensor, dim: int, descending: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The order along `dim` (sorted indices) and, at each sorted position, whether its value is within
    RADIUS standard errors of a neighbour's (so an honest kernel may order them the other way)."""
    values, order = torch.sort(v, dim=dim, descending=descending, stable=True)
    n = v.shape[dim]
    near = torch.zeros(values.shape, dtype=torch.bool, device=v.device)
    if n > 1:
        s = torch.gather(spread, dim, order)
        gap = (values.narrow(dim, 1, n - 1) - values.narrow(dim, 0, n - 1)).abs()
        close = gap <= RADIUS * torch.sqrt(s.narrow(dim, 1, n - 1) ** 2 + s.narrow(dim, 0, n - 1) ** 2)
        near.narrow(dim, 0, n - 1).logical_or_(close)
        near.narrow(dim, 1, n - 1).logical_or_(close)
    return order, near


def _given(func: Any, args: Any, kwargs: Any) -> dict[str, Any]:
    names = [a.name for a in func._schema.arguments]
    return dict(zip(names, args, strict=False)) | dict(kwargs)


def _decided(idx: torch.Tensor, near: torch.Tensor) -> Tracked:
    return _index_tracked(idx, near if bool(near.any()) else None, None)


def selection(func: Any, args: Any, kwargs: Any) -> Any:
    """amax/amin/max/min/argmax/argmin/sort/topk/kthvalue/median/mode and max pools: the values are
    exact picks (the largest variance among what they pick from), the indices are decisions: an index is
    unknowable where its value is within RADIUS standard errors of the next candidate's (a near tie)."""
    name = _name(func)
    given = _given(func, args, kwargs)
    x = args[0]
    v = payload(x)
    out = call_payload(func, args, kwargs)
    var_x = var_of(x)
    dtypes = nominal_dtypes(func, args, kwargs, out)
    if isinstance(out, torch.Tensor) and out.is_floating_point():  # amax, amin, max/min of all, max_pool
        return Tracked.make(out, dtypes[0], None if var_x is None else func(var_x, *args[1:], **kwargs))
    if name.startswith(("max_pool", "adaptive_max_pool")) or name in ("kthvalue", "median", "mode"):
        values, indices = out[0], out[1]
        var = None
        if var_x is not None:
            if name.startswith(("max_pool", "adaptive_max_pool")):
                var = func(var_x, *args[1:], **kwargs)[0]
            else:
                dim = given.get("dim", -1)
                var = torch.gather(var_x, dim, indices.unsqueeze(dim) if values.dim() < v.dim() else indices)
                var = var.squeeze(dim) if values.dim() < v.dim() else var
        flips = index_flips(func, args, kwargs, indices, lambda r: r[1])
        made = (Tracked.make(values, dtypes[0], var), _index_tracked(indices, flips, None))
        return type(out)(made + tuple(out[2:])) if isinstance(out, tuple) else list(made)
    spread = _spread_keeping_unknowable(x)
    largest = name in ("argmax", "max", "topk") and bool(given.get("largest", True))
    if name == "sort":
        largest = bool(given.get("descending", False))
    dim = given.get("dim", -1 if name in ("sort", "topk") else None)
    flat_all = dim is None
    vv, ss = (v.reshape(-1), spread.reshape(-1)) if flat_all else (v, spread)
    d = 0 if flat_all else dim % max(1, v.dim())
    _order, near = ordered_near_ties(vv, ss, d, descending=largest)
    if name in ("argmax", "argmin"):
        first = near.narrow(d, 0, 1) if vv.dim() else near
        keep = bool(given.get("keepdim", False))
        first = first.reshape(out.shape) if (flat_all or keep) else first.squeeze(d)
        return _decided(out, first)
    values, indices = out[0], out[1]
    var = None
    if var_x is not None:
        idx = indices if values.dim() == v.dim() else indices.unsqueeze(d)
        var = torch.gather(var_x, d, idx)
        var = var if values.dim() == v.dim() else var.squeeze(d)
    if name in ("max", "min"):  # max.dim / min.dim
        first = near.narrow(d, 0, 1)
        first = first if bool(given.get("keepdim", False)) else first.squeeze(d)
        decided = _decided(indices, first)
    elif name == "topk":
        k = int(given["k"])
        head = near.narrow(d, 0, k)
        if not bool(given.get("sorted", True)) and bool(head.any()):
            head = torch.ones_like(head)
        decided = _decided(indices, head)
    else:  # sort
        decided = _decided(indices, near)
    made = (Tracked.make(values, dtypes[0], var), decided)
    return type(out)(made + tuple(out[2:])) if isinstance(out, tuple) else list(made)


# ---- casts, copies, movement ----------------------------------------------------------------------------
def to_copy(func: Any, args: Any, kwargs: Any) -> Any:
    x = args[0]
    target = kwargs.get("dtype") or (x.dtype if isinstance(x, torch.Tensor) else None)
    source = x.dtype
    rest = {k: v for k, v in kwargs.items() if k != "dtype"}
    v = payload(x)
    var = var_of(x)
    if not (isinstance(target, torch.dtype) and target.is_floating_point):
        out = func(v, dtype=target, **rest)
        if source.is_floating_point:  # float -> integer: a decision (truncation)
            flips = _flips(func, (x,), kwargs, out, {0: _with_spread(x)})
            return _index_tracked(out, flips, _unsure(var))
        return Tracked.make(out, target, var)
    out = func(v, dtype=torch.float64, **rest)
    var = None if var is None else var.to(out.device)
    if target in LOW_PRECISION and target != source:
        var = flip_variance(out, var, target)
        out = round_to(out, target)
    return Tracked.make(out, target, var)


def copy_into(func: Any, args: Any, kwargs: Any) -> Any:
    """copy_(dst, src): the value and variance of src written into dst; a copy into a lower-precision
    tensor is a cast (rounded, as `to_copy`)."""
    dst, src = args[0], args[1]
    if not isinstance(dst, Tracked):
        dst.copy_(payload(src))
        return dst
    value = payload(src)
    var = var_of(src)
    source = src.dtype if isinstance(src, torch.Tensor) else dst.dtype
    if dst.is_floating_point():
        value = value.to(torch.float64) if isinstance(value, torch.Tensor) else value
        if dst.dtype in LOW_PRECISION and dst.dtype != source and isinstance(value, torch.Tensor):
            var = flip_variance(value, var, dst.dtype)
            value = round_to(value, dst.dtype)
    dst.value.copy_(value)
    dst.write_var(None if var is None else var.expand(dst.shape))
    return dst


def like_factory(func: Any, args: Any, kwargs: Any) -> Any:
    """zeros_like, new_full, ...: a new tensor whose values do not depend on the input's values."""
    out = call_payload(func, args, kwargs)
    dtype = nominal_dtypes(func, args, kwargs, out)[0]
    if out.is_floating_point() and out.dtype != torch.float64:
        out = out.to(torch.float64)
    if dtype in LOW_PRECISION and out.is_floating_point():
        out = round_to(out, dtype)
    return Tracked.make(out, dtype)


# Data movement with index arguments: which index positions an output element follows (for marking the
# elements that follow an index that could flip). Others, if an index could flip: the whole output.
_GATHER_LIKE = {"gather": 2, "index_select": 2, "embedding": 1, "take": 1}


FILL_ARGUMENTS = frozenset({"value", "fill_value"})  # scalars a movement op writes: exact


def _as_variance(a: Any) -> Any:
    """An argument of a movement op as it is applied to variances: floating tensors by their variance
    (exact ones by zeros), indices and sizes as they are."""
    if isinstance(a, Tracked):
        if not a.is_floating_point():
            return a.value
        var = a.var
        return torch.zeros_like(a.value) if var is None else var
    if isinstance(a, torch.Tensor) and a.is_floating_point():
        return torch.zeros_like(a, dtype=torch.float64)
    return a


def movement(func: Any, args: Any, kwargs: Any) -> Any:
    """Ops that only move, copy or select data (cat, pad, gather, index, repeat, flip, ...): the variance
    moves with the values (the same op on the variances, fill values taken as exact)."""
    flat, _spec = tree_flatten((args, kwargs))
    out = call_payload(func, args, kwargs)
    tracked_floats = [i for i, a in enumerate(flat) if isinstance(a, Tracked) and a.is_floating_point()]
    if not any(var_of(flat[i]) is not None for i in tracked_floats):
        var_out = None
    else:
        names = [a.name for a in func._schema.arguments]
        a2 = [0.0 if n in FILL_ARGUMENTS and isinstance(a, int | float) else tree_map(_as_variance, a)
              for a, n in zip(args, names, strict=False)]  # fmt: skip
        k2 = {n: 0.0 if n in FILL_ARGUMENTS and isinstance(a, int | float) else tree_map(_as_variance, a)
              for n, a in kwargs.items()}  # fmt: skip
        var_out = func(*a2, **k2)
    flat_out, out_spec = tree_flatten(out)
    var_flat = tree_flatten(var_out)[0] if var_out is not None else [None] * len(flat_out)
    index_bad = [(i, _unsure(var_of(a))) for i, a in enumerate(flat) if isinstance(a, Tracked) and not a.is_floating_point()]
    index_bad = [(i, b) for i, b in index_bad if b is not None]
    dtypes = iter(nominal_dtypes(func, args, kwargs, out))
    wrapped = []
    for o, var in zip(flat_out, var_flat, strict=False):
        if not isinstance(o, torch.Tensor):
            wrapped.append(o)
            continue
        dtype = next(dtypes)
        if o.is_floating_point() and o.dtype != torch.float64:
            o = o.to(torch.float64)
        if index_bad:
            var = torch.zeros(o.shape, dtype=torch.float64, device=o.device) if var is None else var
            var = _mark(var, _followed(func, args, index_bad, o.shape))
        wrapped.append(Tracked.make(o, dtype, var))
    return tree_unflatten(wrapped, out_spec)


def _followed(func: Any, args: Any, index_bad: list[tuple[int, torch.Tensor]], shape: torch.Size) -> torch.Tensor:
    name = _name(func)
    bad = index_bad[0][1]
    if name == "gather" and bad.shape == shape:
        return bad
    if name == "embedding" and tuple(bad.shape) == tuple(shape[:-1]):
        return bad.unsqueeze(-1).expand(shape)
    if name == "index":  # x[idx] with one index tensor on the first dimension (a table lookup)
        indices = args[1]
        if len(indices) == 1 and tuple(shape[: bad.dim()]) == tuple(bad.shape):
            return bad.reshape(tuple(bad.shape) + (1,) * (len(shape) - bad.dim())).expand(shape)
    if name == "index_select" and bad.dim() == 1:
        dim = args[1] % len(shape)
        view = [1] * len(shape)
        view[dim] = -1
        return bad.reshape(view).expand(shape)
    return torch.ones(shape, dtype=torch.bool, device=bad.device)


# ---- attention kernels PyTorch picks by device and dtype ------------------------------------------------
def attention(mode: Any, func: Any, args: Any, kwargs: Any) -> Any:
    """The fused attention kernels (flash, efficient, cuDNN, CPU flash) that PyTorch picks for the
    reference's dtype and device: evaluated as their math (softmax(q k^T * scale + mask) v) under the
    mode, so each step is tracked; the kernels' extra outputs (log-sum-exp, seeds) are not used by a
    forward, and are returned as the op's meta shapes, empty."""
    q, k, v = args[0], args[1], args[2]
    names = [a.name for a in func._schema.arguments]
    given = dict(zip(names, args, strict=False)) | dict(kwargs)
    scale = given.get("scale")
    causal = bool(given.get("is_causal", False))
    mask = given.get("attn_mask", given.get("attn_bias"))
    if given.get("dropout_p", 0.0):
        raise Untrackable("attention with dropout")
    with mode:
        s = torch.matmul(q, k.transpose(-2, -1)) * (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
        if causal:
            keep = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool, device=s.device).tril()
            s = s.masked_fill(~keep, -math.inf)
        if mask is not None:
            s = s.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool else s + mask
        out = torch.matmul(torch.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype), v)
    try:
        metas = func(*tree_map(_meta, args), **tree_map(_meta, kwargs))
    except Exception as exc:
        raise Untrackable(f"{func} has no meta kernel ({type(exc).__name__})") from exc
    rest = [torch.empty(m.shape, dtype=m.dtype, device=q.device) if isinstance(m, torch.Tensor) else m for m in metas[1:]]
    return (out, *rest)


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
    spreads = {i: _with_spread(flat[i]) for i in floats}
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
    return _wrap(func, args, kwargs, tree_unflatten(converted, spec_o), variances)
