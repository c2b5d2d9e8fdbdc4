"""Trusted side: the drift a plain running sum has on the rounding probe's inputs (truth_sums.reduction).

Why. The truth's allowance for a sum (truth_ops.accumulated) models a running sum's rounding errors as
random: a drift and a walk of size u sqrt(K). The rounding probe (common/rounding_probe.py) sets the same
low mantissa bits (0, 12 and 15 of a float32) on every input value, so that a lowered precision errs one
way. An honest fp32 running sum of such inputs then errs one way too: once the accumulator is 2^13 times a
term, the term's bit 12 is the accumulator's half ulp, and every such addition rounds up. A white-box probe
(2026-12-06) found the honest kernel most people write for KernelBench's level1/48 (a mean over dim 1 of
`torch.rand`, one thread per output looping over the reduced dimension) refused for it: statistic 3.42,
9.6 and 20.4 against a bound of 3.4 at K = 4096, 8192 and 16384, where the same inputs without the probe
bits give 0.7-0.8. The sign audit cannot mix a mean's signs (its outputs would shrink to zero), so the
inputs stay one-signed and the drift adds up.

What. The error of that running sum, worked out rather than modelled. With A_k the exact sum of the terms
before term k (float64) and ulp_k the accumulation precision's unit in the last place at |A_k + t_k|
(u 2^e for a frexp exponent e), adding t_k rounds it to a multiple of ulp_k: an error of
round(t_k / ulp_k) ulp_k - t_k (ties to even, as the hardware). The sum of these errors over k is the
running sum's error in the reduction's own order, vectorised (no loop over K). Random bits give a walk the
model already allows; the probe's bits give the drift, which the model did not. Its square joins the
sum's variance (truth_sums.reduction).

Where not. A sum over every element (dim None): no kernel takes one running sum over a whole tensor (a
grid of threads takes short ones and combines them), and its cumsum would double the largest tensor in
float64. Accumulators of other orders (split-K, a tree, two interleaved sums) have smaller partial sums,
so less drift: this one is the largest an honest order has, which is what the allowance is for.

Cost: a float64 cumulative sum and a few temporaries of the reduced tensor, in blocks of at most
`BLOCK_ELEMENTS` elements, once per truth of a sum over some dimensions.
"""

from __future__ import annotations

import math

import torch

BLOCK_ELEMENTS = 1 << 24


def running_sum_drift(
    values: torch.Tensor, dims: list[int], keepdim: bool, unit_roundoff: float
) -> torch.Tensor | None:
    """|error| of a running sum of `values` (the truth's payload) over `dims` in index order, in an
    accumulator of unit roundoff `unit_roundoff`, shaped as the sum's result; None for a sum over every
    dimension or of no elements."""
    dims = sorted(set(dims))
    if values.dim() == 0 or len(dims) >= values.dim() or values.numel() == 0:
        return None
    kept = [d for d in range(values.dim()) if d not in dims]
    view = values.permute(*kept, *dims)  # no copy: blocks of the leading kept dimension are copied below
    rest_shape = view.shape[: len(kept)]
    count = math.prod(values.shape[d] for d in dims)
    per_lead = max(1, view[0].numel())
    leads = max(1, BLOCK_ELEMENTS // per_lead)
    parts = []
    for start in range(0, view.shape[0], leads):
        block = view[start : start + leads].reshape(-1, count).to(torch.float64)
        after = torch.cumsum(block, dim=1)
        _, exponent = torch.frexp(after)
        del after
        ulp = torch.ldexp(torch.full_like(block, unit_roundoff), exponent)
        del exponent
        parts.append(((torch.round(block / ulp) * ulp) - block).sum(dim=1).abs())
        del block, ulp
    drift = torch.cat(parts)
    drift = drift.reshape(rest_shape)
    if keepdim:
        for d in dims:
            drift = drift.unsqueeze(d)
    return drift
