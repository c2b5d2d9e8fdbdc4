"""Trusted side: what the truth's op rules share: an op called on float64 payloads, the dtypes the
reference's op returns, and the arithmetic of error variances (tracked.py holds the tracked tensor).

Each rule computes the op on float64 payloads and the variance of the error an honest kernel computing the
op in the task's precision can have: the error its inputs already carry, propagated, plus the op's own
(u is the unit roundoff of the dtype named). The rules, by family, with why their own error is what it is:
truth_sums.py (sums, products, convolutions, pools, attention), truth_pointwise.py (pointwise ops and ops
with no rule), truth_selection.py (max, sort, top-k: exact picks and decisions), truth_movement.py (casts,
copies, data movement); truth.py maps each op to its rule. Two pieces every family uses live here:

- **a sum's own error** (`accumulated`, used by every rule that sums, and by `generic`): a sum of K terms
  accumulated in float32 (float64 for float64 tasks) in the worst honest order has error variance about
  u^2 K (y^2/3 + M2/6) + u^2 M2, M2 the sum of the terms' squares (truth_sums.py says why).
- **decisions** (`decision_flips`, `index_tracked`: comparisons, argmax, sort and top-k indices, casts to
  integers): exact, but an element whose decision flips when its inputs move by R standard errors is
  marked unknowable (variance +inf) and so is everything computed from it: the audit leaves those
  elements out rather than refuse a kernel whose argmax went the other way on a near tie.

Ops with no rule are decomposed by PyTorch's decompositions (softmax, layer norm, group norm, batch
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
    accumulation_roundoff,
    is_float,
    payload,
    round_to,
    roundoff,
    var_of,
)

# Finite differences and the flip test look this many standard errors away from the exact value.
RADIUS = 4.0
# Round-to-nearest errors are uniform within half an ulp: their root mean square is about 0.42 u |s| over
# the magnitudes s takes (u |s| / sqrt(3) at a power of two, half that below the next one). 0.5 keeps a
# margin; measured: an honest running sum's statistic is about 0.8 with it (benchmarks/precision_audit.py).
ROUNDING_RMS = 0.5
# Random perturbations (besides one input at a time, both ways) that look for a decision within the error.
FLIP_DRAWS = 2
FLIP_SEED = 20261203


def op_name(func: Any) -> str:
    """The op's name without overload or in-place suffix (`add_.Tensor` -> `add`): what the tables key on."""
    return func.overloadpacket.__name__.rstrip("_") if hasattr(func, "overloadpacket") else str(func)


# ---- nominal dtypes ----------------------------------------------------------------------------------
def meta_of(a: Any) -> Any:
    """A tensor as a meta tensor of its shape, strides and dtype (other arguments as they are)."""
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
        made, _ = tree_flatten(func(*tree_map(meta_of, args), **tree_map(meta_of, kwargs)))
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


# ---- variance arithmetic (None: exact; +inf: unknowable) ------------------------------------------------------
def finite(var: torch.Tensor) -> torch.Tensor:
    """The variance with its unknowable (+inf) elements as 0, for sums that must stay finite."""
    return torch.where(torch.isinf(var), torch.zeros_like(var), var)


def unknowable(var: torch.Tensor | None) -> torch.Tensor | None:
    """Where a variance marks its element unknowable (+inf); None where nothing is."""
    if var is None:
        return None
    bad = torch.isinf(var)
    return bad if bool(bad.any()) else None


def add_terms(*terms: torch.Tensor | None) -> torch.Tensor | None:
    """The sum of the variances given, None (exact) standing for nothing."""
    total = None
    for t in terms:
        if t is not None:
            total = t if total is None else total + t
    return total


def mark_unknowable(var: torch.Tensor, unsure: torch.Tensor | None) -> torch.Tensor:
    """The variance with +inf where `unsure` holds (an element computed from an unknowable one)."""
    return var if unsure is None else torch.where(unsure, math.inf, var)


def inputs_unknowable(flat: Sequence[Any], shape: torch.Size) -> torch.Tensor | None:
    """Where any tracked input (broadcast to `shape`) is unknowable."""
    found = None
    for a in flat:
        bad = unknowable(var_of(a))
        if bad is not None:
            try:
                bad = torch.broadcast_to(bad, shape)
            except RuntimeError:
                bad = torch.ones(shape, dtype=torch.bool, device=bad.device)  # not elementwise: all of it
            found = bad if found is None else found | bad
    return found


def local_rounding(y: torch.Tensor, nominal: torch.dtype, k: float = 1.0, scale: Any = 0.0) -> torch.Tensor:
    """(k u |y|)^2, |y| taken at least `scale` (a number or a tensor broadcast to y)."""
    u = roundoff(nominal) * k
    mag = y.abs() if isinstance(scale, float) and scale == 0.0 else torch.maximum(y.abs(), torch.as_tensor(scale, dtype=y.dtype, device=y.device))
    return torch.where(torch.isfinite(y), (u * mag) ** 2, 0.0)  # an infinite result is exactly that


def wrap_outputs(func: Any, args: Any, kwargs: Any, out: Any, variances: list[torch.Tensor | None]) -> Any:
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


def own_rounding(value: torch.Tensor, dtype: torch.dtype, rho: float = 1.0) -> torch.Tensor:
    """(rho u |v|)^2: one more rounding of an input in its own dtype (0 at infinities: they stay)."""
    return torch.where(torch.isfinite(value), (rho * roundoff(dtype) * value.abs()) ** 2, 0.0)


def with_spread(a: Tracked) -> torch.Tensor:
    """An input's standard error with one rounding of its own dtype, unknowable elements taken as 0."""
    own = own_rounding(a.value, a.dtype)
    var = a.var
    return torch.sqrt(own if var is None else own + finite(var))


# ---- decisions ------------------------------------------------------------------------------------------------
def decision_flips(func: Any, args: Any, kwargs: Any, y: torch.Tensor, spreads: dict[int, torch.Tensor]) -> torch.Tensor | None:
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


def index_tracked(idx: torch.Tensor, flips: torch.Tensor | None, inherited: torch.Tensor | None) -> Tracked:
    """A decision's result: exact, unknowable where it flips or was computed from something unknowable."""
    bad = flips if inherited is None else (inherited if flips is None else flips | inherited)
    return Tracked.make(idx, idx.dtype, None if bad is None else torch.where(bad, math.inf, 0.0).to(torch.float64))


# ---- a sum's own error, a rounding to a low dtype, magnitudes in low precision --------------------------------
def accumulated(
    y: torch.Tensor, m2: torch.Tensor, count: float | torch.Tensor, dtype: torch.dtype, amplification: float = 1.0
) -> torch.Tensor:
    """The own error variance of a sum of `count` terms (truth_sums.py's docstring): running-sum drift and walk in
    the accumulation precision, the products' rounding, the result's rounding to its dtype. `amplification`
    scales the accumulation's standard deviation (not the result's rounding) for a sum an honest kernel may
    take in a transformed basis (Winograd's, truth_sums.WINOGRAD_AMPLIFICATION)."""
    u = accumulation_roundoff(dtype) * ROUNDING_RMS * amplification
    return u * u * (count * (y * y / 3 + m2 / 6) + m2) + local_rounding(y, dtype)


def flip_variance(value: torch.Tensor, var: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """The variance a rounding to a low dtype adds when its input carries an error of standard deviation
    s: the result moves by one ulp (2 u |v|) where the input crosses a rounding boundary, which happens
    with probability about s / ulp, so s * ulp (at most ulp^2). An exact input (an input, a weight) rounds
    the same in every kernel: nothing."""
    if var is None:
        return None
    ulp = 2 * roundoff(dtype) * value.abs()
    return var + torch.minimum(torch.sqrt(finite(var)), ulp) * ulp


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
