"""Trusted side: the reference run on every second index of a global input, as a degeneracy stand-in.

Why. A mean over many rows of a bounded per-row term (a cosine similarity loss, a hinge or margin loss)
can be read from a sample: no few elements move it (the outlier audit finds no magnitude and says so in its
`refused`), and where the rows' terms are nearly alike on every draw, a sample's error is far inside the
error an honest fp32 computation is allowed. Measured on the CPU (docs/design/precision.md): a cosine
similarity loss of 4096 x 4096 inputs whose rows are nearly anti-parallel (`b = -a + 0.1 n`) read from
every 16th row has a precision statistic of 1.03 against a bound of 9, and from every 2nd column 0.21.
No check on the candidate's outputs can tell such a sample from the whole, so the task cannot tell a kernel
that reads its input from one that reads a part of it: a degenerate task (`task_error`), like one a
constant answers.

What. Only for inputs the outlier audit qualified (many input elements per output) and left without
outliers: along each dimension of such an input, the reference is run on every second index of it (and of
every other tensor input whose broadcast-aligned dimension has the same size, so that the forward still
makes sense), as is and scaled by the inverse of the share (a sum read from half its terms and doubled).
The sample passes a set when every output has the reference's shape and dtype, is within the tolerance,
and, where the float64 truth exists, within the precision audit's bound (precision.py). The degeneracy
audit then calls the task degenerate if some sample passes on every set (degeneracy.py's `always`).

Not a stand-in at every stride: a stride of 2 errs least of all regular samples, so a task that a stride-2
sample does not pass on some set refuses every sparser one there too, in expectation. Costs one forward on
half the data per dimension and set, and only for tasks with such an input. KernelBench's six level-1
losses, audited with it on an H100 (docs/kernelbench_degeneracy.md): none flagged.

Trust boundary: runs in the reference worker only, on the reference model and inputs the judge drew.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from cuda_agent.judge.trusted import precision
from cuda_agent.judge.trusted.compare import Tolerance, passes_with
from cuda_agent.judge.trusted.truth import Truth
from cuda_agent.task import flatten_tensors

STRIDE = 2  # every second index: the regular sample that errs least


@dataclass(frozen=True)
class Sampling:
    """Every STRIDE-th index along `dim` of input `position` (and of the inputs aligned with it)."""

    position: int
    dim: int

    def label(self, scaled: bool) -> str:
        times = f", times {STRIDE}," if scaled else ""
        return (f"the reference run on every {STRIDE}nd index along dim {self.dim} of input {self.position}{times} "
                "(within the precision audit's bound too)")  # fmt: skip


def samplings(inputs: Sequence[Any], positions: Iterable[int]) -> list[Sampling]:
    """The samplings of the inputs at `positions` (those the outlier audit left without outliers): one per
    dimension of at least STRIDE indices, and one per set of cuts (two inputs of one shape cut alike are
    one sample, not two)."""
    found, seen = [], set()
    for position in sorted(set(positions)):
        x = inputs[position] if 0 <= position < len(inputs) else None
        if not isinstance(x, torch.Tensor):
            continue
        for d, size in enumerate(x.shape):
            cut = tuple(sorted(_cuts(inputs, Sampling(position, d)).items())) if size >= STRIDE else None
            if cut is not None and cut not in seen:
                seen.add(cut)
                found.append(Sampling(position, d))
    return found


def _cuts(inputs: Sequence[Any], sampling: Sampling) -> dict[int, int]:
    """Input position -> the dimension cut there: the sampled one, and in every other tensor input the
    dimension aligned with it from the right (broadcasting's rule) where it has the same size."""
    base = inputs[sampling.position]
    size, from_right = base.shape[sampling.dim], base.dim() - sampling.dim
    cuts = {sampling.position: sampling.dim}
    for j, x in enumerate(inputs):
        aligned = x.dim() - from_right if isinstance(x, torch.Tensor) else -1
        if j != sampling.position and aligned >= 0 and x.shape[aligned] == size:
            cuts[j] = aligned
    return cuts


def sampled_inputs(inputs: Sequence[Any], sampling: Sampling) -> list[Any]:
    """Copies of the inputs with every STRIDE-th index kept along the cut dimensions (`_cuts`); the other
    tensors copied whole (a forward may update its inputs), everything else as it is."""
    cuts = _cuts(inputs, sampling)
    out: list[Any] = []
    for j, x in enumerate(inputs):
        if j in cuts:
            d = cuts[j]
            out.append(x.index_select(d, torch.arange(0, x.shape[d], STRIDE, device=x.device)))  # a copy
        else:
            out.append(x.clone() if isinstance(x, torch.Tensor) else x)
    return out


def _passes(ref: torch.Tensor, got: torch.Tensor, truth: Truth | None, tol: Tolerance, k: float) -> bool:
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return False
    if truth is not None and truth.rows is not None:  # a truth of a block of rows: outputs follow the rows
        return False
    if not passes_with(ref, got, tol):
        return False
    if truth is None or not precision.auditable(ref):
        return True
    return precision.audit(got, ref, truth, k).passed


def passing(
    model: torch.nn.Module, inputs: Sequence[Any], outputs: Sequence[torch.Tensor],
    truths: Sequence[Truth | None] | None, tol: Tolerance, k: float, found: Sequence[Sampling],
) -> list[str]:  # fmt: skip
    """The labels of the samples that pass on this set: `inputs` as drawn (not changed here), `outputs` the
    reference's on them, `truths` their float64 truths (None: the tolerance alone)."""
    labels = []
    for sampling in found:
        try:
            with torch.no_grad():
                got = [t.detach() for t in flatten_tensors(model(*sampled_inputs(inputs, sampling)))]
        except Exception:  # the forward does not take a sample along this dimension: no stand-in
            continue
        if len(got) != len(outputs):
            continue
        size = inputs[sampling.position].shape[sampling.dim]
        for scaled, factor in ((False, 1.0), (True, size / math.ceil(size / STRIDE))):
            fakes = [g * factor if scaled and g.is_floating_point() else g for g in got]
            if all(_passes(r, f, truths[i] if truths else None, tol, k)
                   for i, (r, f) in enumerate(zip(outputs, fakes, strict=True))):  # fmt: skip
                labels.append(sampling.label(scaled))
                break
        del got
    return labels
