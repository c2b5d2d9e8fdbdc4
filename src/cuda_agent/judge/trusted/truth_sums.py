"""Trusted side: the truth's rules for sums and products: matmuls, convolutions, sums and means,
cumulative sums, average pools, and the fused attention kernels (evaluated as their math).

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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_map

from cuda_agent.judge.trusted.tracked import (
    Tracked,
    Untrackable,
    accumulation_roundoff,
    payload,
    var_of,
)
from cuda_agent.judge.trusted.truth_drift import running_sum_drift
from cuda_agent.judge.trusted.truth_ops import (
    accumulated,
    add_terms,
    call_payload,
    finite,
    local_rounding,
    magnitudes,
    mark_unknowable,
    meta_of,
    nominal_dtypes,
    op_name,
    unknowable,
    wrap_outputs,
)

aten = torch.ops.aten


class _Shaped:
    """A payload and variance broadcast to an output's shape (a bias joining a sum)."""

    def __init__(self, value: torch.Tensor, var: torch.Tensor | None) -> None:
        self.value, self.var = value, var


def _products(
    y: torch.Tensor, dtype: torch.dtype, f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], a: Any, b: Any,
    count: float, bias: _Shaped | None = None, beta: float = 1.0, alpha: float = 1.0, amplification: float = 1.0,
) -> Tracked:  # fmt: skip
    """The result y = beta * bias + alpha * f(a, b) of an op that is a sum over products of two tensors
    (mm, bmm, convolution, ...): f applied to the squares gives M2, applied to an input's variance and the
    other's square the propagated error; `bias` (broadcast to y) is one more term of the sum; `amplification`
    widens the accumulation's own error where a transformed basis is an honest way to take the sum."""
    va, vb = payload(a), payload(b)
    sa, sb = va * va, vb * vb
    m2 = magnitudes(f, sa, sb)
    var_a, var_b = var_of(a), var_of(b)
    prop = add_terms(
        None if var_a is None else magnitudes(f, finite(var_a), sb),
        None if var_b is None else magnitudes(f, sa, finite(var_b)),
    )
    unsure = None
    bad_a, bad_b = unknowable(var_a), unknowable(var_b)
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
            prop = add_terms(prop, beta * beta * finite(var_bias))
            bad = unknowable(var_bias)
            if bad is not None:
                unsure = bad if unsure is None else unsure | bad
        count += 1
    var = accumulated(y, m2, count, dtype, amplification)
    if prop is not None:
        var = var + prop
    return Tracked.make(y, dtype, var if unsure is None else mark_unknowable(var, unsure))


def matmul_family(func: Any, args: Any, kwargs: Any) -> Any:
    """mm, bmm, mv, dot and their forms with an added tensor (addmm, baddbmm, addmv, addbmm, addr)."""
    name = op_name(func)
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


# Winograd's minimal filtering (Lavin and Gray, 2016) takes a 3x3, stride-1 convolution's sum in a transformed
# basis whose transforms amplify rounding: fp32 F(4x4, 3x3), the tile cuDNN and hand-written kernels use, measured
# up to 11x this rule's direct-sum standard deviation (C_in = 1; 5x at 16, 1.3-2.6x from 256 on; randn and
# mixed-sign inputs, CPU emulation in benchmarks/precision_variants.py), F(2x2, 3x3) up to 1.7x. Allowing 8x
# keeps F(4x4) at or below 1.6 of the audit's bound of about 3 and TF32 operands (the operand rounding an fp32
# task must not take) at 15 or more even at C_in = 2048. Larger tiles (F(6x6, 3x3)) are not covered.
WINOGRAD_AMPLIFICATION = 8.0


def _winograd_shaped(weight: torch.Tensor, full: dict[str, Any]) -> bool:
    """A 2-D, 3x3, stride-1, undilated, untransposed convolution: one Winograd's F(m x m, 3 x 3) computes."""
    return (
        weight.dim() == 4 and tuple(weight.shape[2:]) == (3, 3) and not full.get("transposed")
        and all(int(s) == 1 for s in (full.get("stride") or [1]))
        and all(int(d) == 1 for d in (full.get("dilation") or [1]))
    )  # fmt: skip


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
    amplification = WINOGRAD_AMPLIFICATION if _winograd_shaped(w, full) else 1.0
    return _products(y, dtype, f, full["input"], full["weight"], float(count), shaped, amplification=amplification)


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
        return wrap_outputs(func, args, kwargs, y, [None])
    dims = _dims(v, dim)
    count = float(math.prod(v.shape[d] for d in dims)) if v.dim() else 1.0
    mean = op_name(func) in ("mean", "nanmean")
    scale = 1.0 / count if mean else 1.0
    vv = v.to(torch.float64) if not v.is_floating_point() else v
    s = y / scale
    m2 = torch.sum(vv * vv, dim=dims, keepdim=keepdim) if v.dim() else vv * vv
    var = accumulated(s, m2, count, dtype) * scale * scale + local_rounding(y, dtype)
    if v.is_floating_point():  # the rounding probe's drift in the plain running sum (truth_drift.py)
        drift = running_sum_drift(v, dims, keepdim, accumulation_roundoff(dtype))
        var = var if drift is None else var + drift * drift * (scale * scale)
    var_x = var_of(x)
    if var_x is not None and v.is_floating_point():
        var = var + torch.sum(finite(var_x), dim=dims, keepdim=keepdim) * scale * scale
        bad = unknowable(var_x)
        if bad is not None:
            var = mark_unknowable(var, torch.any(bad, dim=dims, keepdim=keepdim) if v.dim() else bad)
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
        var = var + torch.cumsum(finite(var_of(x)), dim)
        bad = unknowable(var_of(x))
        if bad is not None:
            var = mark_unknowable(var, torch.cumsum(bad.to(torch.int32), dim) > 0)
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
    var = accumulated(y * window, m2, window, dtype) / (window * window) + local_rounding(y, dtype)
    if var_of(x) is not None:
        var = var + pool(finite(var_of(x))) / window
        bad = unknowable(var_of(x))
        if bad is not None:
            var = mark_unknowable(var, pool(bad.to(torch.float64)) > 0)
    return Tracked.make(y, dtype, var)


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
        metas = func(*tree_map(meta_of, args), **tree_map(meta_of, kwargs))
    except Exception as exc:
        raise Untrackable(f"{func} has no meta kernel ({type(exc).__name__})") from exc
    rest = [torch.empty(m.shape, dtype=m.dtype, device=q.device) if isinstance(m, torch.Tensor) else m for m in metas[1:]]
    return (out, *rest)
