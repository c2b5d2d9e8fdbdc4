"""Trusted side: the truth's rules for casts, copies, new tensors and data movement.

- **selections and data movement** (views, copies, cat, pads, gathers, max and max-pools): exact; the
  variance moves with the data (a max takes the largest variance of its window).
- **casts**: to fp16/bf16/fp8 a rounding the task asks for, kept in the value; where the rounded value
  carries an error s, the candidate's may land on the other side of a rounding boundary (one ulp, with
  probability about s / ulp), which adds s * ulp to the variance; to float32 or float64 nothing.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from cuda_agent.judge.trusted.tracked import (
    LOW_PRECISION,
    Tracked,
    payload,
    round_to,
    var_of,
)
from cuda_agent.judge.trusted.truth_ops import (
    call_payload,
    decision_flips,
    flip_variance,
    index_tracked,
    mark_unknowable,
    nominal_dtypes,
    op_name,
    unknowable,
    with_spread,
)


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
            flips = decision_flips(func, (x,), kwargs, out, {0: with_spread(x)})
            return index_tracked(out, flips, unknowable(var))
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
    index_bad = [(i, unknowable(var_of(a))) for i, a in enumerate(flat) if isinstance(a, Tracked) and not a.is_floating_point()]
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
            var = mark_unknowable(var, _followed(func, args, index_bad, o.shape))
        wrapped.append(Tracked.make(o, dtype, var))
    return tree_unflatten(wrapped, out_spec)


def _followed(func: Any, args: Any, index_bad: list[tuple[int, torch.Tensor]], shape: torch.Size) -> torch.Tensor:
    name = op_name(func)
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
