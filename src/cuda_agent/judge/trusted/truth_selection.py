"""Trusted side: the truth's rule for selections: max, min, sorts, top-k, medians and max pools, whose
values are exact picks and whose indices are decisions.

- **decisions** (comparisons, argmax, sort and top-k indices, casts to integers): exact, but an element
  whose decision flips when its inputs move by R standard errors is marked unknowable (variance +inf) and
  so is everything computed from it: the audit leaves those elements out rather than refuse a kernel
  whose argmax went the other way on a near tie.
- **selections and data movement** (views, copies, cat, pads, gathers, max and max-pools): exact; the
  variance moves with the data (a max takes the largest variance of its window).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from cuda_agent.judge.trusted.tracked import (
    Tracked,
    payload,
    var_of,
)
from cuda_agent.judge.trusted.truth_ops import (
    FLIP_DRAWS,
    FLIP_SEED,
    RADIUS,
    call_payload,
    index_tracked,
    nominal_dtypes,
    op_name,
    own_rounding,
    with_spread,
)


def index_flips(func: Any, args: Any, kwargs: Any, indices: torch.Tensor, pick: Callable[[Any], torch.Tensor]) -> torch.Tensor | None:
    """Where an index result (argmax, sort order, top-k) changes when the input moves by up to RADIUS
    standard errors at random (FLIP_DRAWS + 2 draws, both signs)."""
    x = args[0]
    spread = with_spread(x)
    if not bool((spread > 0).any()):
        return None
    gen = torch.Generator(device=spread.device).manual_seed(FLIP_SEED)
    flips = torch.zeros(indices.shape, dtype=torch.bool, device=indices.device)
    for _ in range(FLIP_DRAWS + 2):
        signs = torch.randint(0, 2, spread.shape, generator=gen, device=spread.device) * 2 - 1
        other = pick(call_payload(func, args, kwargs, {0: x.value + RADIUS * spread * signs}))
        flips |= other != indices
    return flips if bool(flips.any()) else None


def _spread_keeping_unknowable(a: Any) -> torch.Tensor:
    """Standard error (with one rounding of the input's own dtype) per element, +inf where unknowable."""
    value = payload(a)
    own = own_rounding(value, a.dtype)
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
    return index_tracked(idx, near if bool(near.any()) else None, None)


def selection(func: Any, args: Any, kwargs: Any) -> Any:
    """amax/amin/max/min/argmax/argmin/sort/topk/kthvalue/median/mode and max pools: the values are
    exact picks (the largest variance among what they pick from), the indices are decisions: an index is
    unknowable where its value is within RADIUS standard errors of the next candidate's (a near tie)."""
    name = op_name(func)
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
        made = (Tracked.make(values, dtypes[0], var), index_tracked(indices, flips, None))
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


# Floating ops whose result jumps where their input crosses a value (an integer, a multiple, zero): an
# honest kernel's slightly different input can land on the other side.
_DISCONTINUOUS = frozenset({"floor", "ceil", "round", "trunc", "frac", "sign", "remainder", "fmod", "heaviside",
                            "floor_divide", "bucketize", "searchsorted"})  # fmt: skip
# Ops that return a Python value about a tensor's layout or a kernel choice, not about its values.
_METADATA = frozenset({"is_same_size", "_has_compatible_shallow_copy_type", "_fused_sdp_choice"})


def decides(func: Any, given: Any, result: Any, picks: tuple[str, ...]) -> bool:
    """Did this op decide on floating values (truth.py's `Truth.decided`): a pick or an index (`picks`,
    the selection ops), a discontinuous op, or a non-floating result (a comparison, a cast to an integer,
    a Python scalar read for control flow) computed from a floating tracked input?"""
    name = func.overloadpacket.__name__
    if name in picks or name in _DISCONTINUOUS:
        return True
    if name in _METADATA:
        return False
    flat, _ = tree_flatten(given)
    if not any(isinstance(a, Tracked) and a.is_floating_point() for a in flat):
        return False
    out, _ = tree_flatten(result)
    return any(not (isinstance(o, torch.Tensor) and o.is_floating_point()) for o in out if o is not None)
