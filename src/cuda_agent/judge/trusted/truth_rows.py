"""Trusted side: the float64 truth of a block of the batch, where the whole batch's does not fit in memory.

Why: promoting every op keeps about twelve float64 copies of the largest tensor alive at once inside one
op's rule (the value, its error variance, the rule's own temporaries): 24 times one float32 input set.
KernelBench's Softsign (6 GiB a set) needed 146 GiB, more than an H200 has, so its truth ran out of memory
and the precision audit had nothing to compare with (issue 29 item 1).

What: `TruthModel` (truth.py) plans a block of rows from the inputs' size and the GPU's free memory
(`planned_rows`), or tries the whole batch where it should fit. When that runs out of memory it halves the
block of rows, along dimension 0 of every input whose first dimension is the batch's, until the truth of a
block fits. Each call then takes a block at a secret random offset (`secrets`, in the reference worker: a
candidate cannot know which rows are audited, so lowering precision on some rows is caught in proportion
to the rows it lowers). The truth of a block is valid only where the batch's elements do not interact (a
batch norm, a softmax over dimension 0 make them interact): `agrees` checks each block's truth against the
reference's own full-batch output on those rows, within the task's tolerance, every time it is used. Where
it does not agree, blocks are off for that model and the whole batch's truth is made after all (the plan is
an estimate); where that does not fit either, there is no truth, and the judgment fails closed as for any
task without one (decide/reference_stage.py `no_precision_truth`).
"""

from __future__ import annotations

import secrets
from typing import Any

import torch

from cuda_agent.judge.trusted.compare import Tolerance

# Float64 copies of the largest input one op's rule holds at once while the truth is made: 13 measured on
# the CPU at 1/64 of KernelBench's sizes (Softsign, InstanceNorm: 26 float32 input sets), one more to spare.
COPIES = 14
# The share of the GPU's free memory a planned block may need: the rest stays for what is held beside it.
SHARE = 0.5


def planned_rows(inputs: list[Any], batch: int, free_bytes: int) -> int | None:
    """Rows of a block whose truth should fit in SHARE of `free_bytes`, or None where the whole batch's
    should. Planned before the first attempt, so that the truth does not fill the GPU to find its limit
    (the out-of-memory halving stays, for what the estimate misses: an output larger than every input)."""
    floating = [x for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if not floating:
        return None
    need = COPIES * 8 * max(x.numel() for x in floating)
    budget = SHARE * free_bytes
    return None if need <= budget else max(1, int(batch * budget / need))


def free_gpu_bytes(inputs: list[Any]) -> int | None:
    """Free memory of the GPU the inputs are on, counting what this process's allocator caches unused."""
    device = next((x.device for x in inputs if isinstance(x, torch.Tensor) and x.is_cuda), None)
    if device is None:
        return None
    free, _ = torch.cuda.mem_get_info(device)
    return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))


def batch_size(inputs: list[Any]) -> int | None:
    """The first dimension of the first tensor input with one: the batch the rows are taken from."""
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.dim() > 0:
            return int(x.shape[0])
    return None


def block(batch: int, rows: int) -> tuple[int, int]:
    """`rows` consecutive rows at a secret offset."""
    rows = max(1, min(rows, batch))
    start = secrets.randbelow(batch - rows + 1)
    return start, start + rows


def slice_inputs(inputs: list[Any], batch: int, rows: tuple[int, int]) -> list[Any]:
    """Every tensor input whose first dimension is the batch's, cut to `rows` (views); the others whole.

    An input may be as long as the batch by chance and broadcast along another dimension (KernelBench's
    HingeLoss: predictions N x N times targets of N, along the columns): the model cannot take such a block,
    and `TruthModel.outputs` then turns blocks off for it and tries the whole batch."""
    start, stop = rows
    return [
        x[start:stop] if isinstance(x, torch.Tensor) and x.dim() > 0 and x.shape[0] == batch else x
        for x in inputs
    ]


def on_rows(tensor: torch.Tensor, rows: tuple[int, int] | None) -> torch.Tensor:
    """The rows of `tensor` a block's truth covers (a view), or `tensor` itself where the truth covers the
    whole batch (`rows` None) or the tensor has no rows (0-d)."""
    if rows is None or tensor.dim() == 0:
        return tensor
    return tensor[rows[0] : rows[1]]


def agrees(truths: list[Any], outputs: list[torch.Tensor], tol: Tolerance) -> str | None:
    """None when each block truth matches the reference's full-batch output on its rows within `tol`
    (float comparison, NaN where the reference has NaN); else why the block's truth cannot stand for them."""
    for k, (truth, out) in enumerate(zip(truths, outputs, strict=False)):
        rows = getattr(truth, "rows", None)
        if truth is None or rows is None:
            continue
        start, stop = rows
        if out.dim() == 0 or tuple(truth.value.shape) != (stop - start, *out.shape[1:]):
            return f"output {k} does not keep the batch's rows (shape {tuple(out.shape)})"
        ref = out[start:stop].to(torch.float64)
        value = truth.value.to(ref.device, torch.float64)
        if not out.is_floating_point():
            same = torch.equal(ref, value)
        else:
            same = bool(torch.isclose(value, ref, rtol=tol.rtol, atol=tol.atol, equal_nan=True).all())
        if not same:
            return (f"output {k} on rows {start}-{stop - 1} alone differs from the whole batch's on them "
                    "(the batch's elements interact)")  # fmt: skip
    return None
