"""Comparing a candidate's outputs with the reference's: the checks and a report an agent can use.

Exact shape, dtype and device; values compared by logical index (strides do not matter), within
atol + rtol * |ref| (complex ones as real and imaginary parts); NaN or Inf where the reference is finite fails, and NaN where the reference has NaN
is accepted. Boolean and integer outputs are compared exactly, with flips allowed only where the
reference's value before a comparison lies within the tolerance of the cut (cuts.py). The report gives
the mismatch count, the first mismatching indices and the largest errors, as GPU MODE's reference
evaluator does.

Trust boundary: runs in the reference worker only, on the handed-over bytes of the candidate's outputs
(bounds-checked by common/tensorfile.py). Facts it establishes: values within tolerance, NaN/Inf only
where the reference has them, shape and dtype (the degeneracy audit is degeneracy.py). Cannot be forged:
the candidate's process only writes bytes; the comparison and the reference outputs never exist there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from cuda_agent.judge.trusted import cuts


@dataclass(frozen=True)
class Tolerance:
    atol: float = 1e-2
    rtol: float = 1e-2


def describe(t: torch.Tensor) -> dict[str, Any]:
    return {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."), "device": t.device.type}


def compare_tensor(ref: torch.Tensor, out: torch.Tensor, tol: Tolerance, label: str,
                   alts: cuts.Alternatives | None = None, flips: torch.Tensor | None = None) -> str | None:  # fmt: skip
    """None if `out` matches `ref`, else a sentence saying where and by how much it does not. Values are
    compared by logical index, whatever either tensor's strides. A boolean or integer output is compared
    exactly, except where `alts` (the reference with its cuts shifted, cuts.py) allow a flip (and, where
    given, `flips` marks the element: cuts.within_honest_error)."""
    if type(out) is not torch.Tensor:
        return f"{label} is a {type(out).__name__}, not a plain torch.Tensor"
    if tuple(out.shape) != tuple(ref.shape):
        return f"{label} has shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    if out.dtype != ref.dtype:
        return f"{label} has dtype {out.dtype}, expected {ref.dtype}"
    if out.device.type != ref.device.type:
        return f"{label} is on {out.device.type}, expected {ref.device.type}"
    if ref.numel() == 0:
        return None
    if ref.is_complex():  # both parts, by logical index: a float64 copy of a complex tensor keeps only its real part
        return compare_tensor(_real_pairs(ref), _real_pairs(out), tol, f"{label} (as [real, imaginary] pairs)")
    if cuts.discrete(ref):
        return cuts.flip_problem(ref, out, label, mask=flips, alts=alts or ())
    ref_c = ref.to(torch.float64)
    out_c = out.to(ref_c.device, torch.float64)
    ref_nan = torch.isnan(ref_c)
    out_nan = torch.isnan(out_c)
    ref_finite = torch.isfinite(ref_c)
    out_finite = torch.isfinite(out_c)
    bad_nonfinite = ref_finite & ~out_finite
    if bool(bad_nonfinite.any()):
        count = int(bad_nonfinite.sum())
        first = _indices(bad_nonfinite, ref.shape)
        nan_count = int((bad_nonfinite & out_nan).sum())
        return (
            f"{label} has {count} NaN/Inf values where the reference is finite ({nan_count} NaN; "
            f"first at {first}): unwritten output (memory is poisoned with NaN) or an overflow"
        )
    mismatch = ~torch.isclose(out_c, ref_c, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
    mismatch &= ~(ref_nan & out_nan)
    if not bool(mismatch.any()):
        return None
    count = int(mismatch.sum())
    error = (out_c - ref_c).abs().masked_fill(~mismatch, 0)
    worst = int(error.argmax())
    worst_index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), ref.shape))
    return (
        f"{label}: {count} of {ref.numel()} elements ({100 * count / ref.numel():.2f}%) differ beyond "
        f"atol={tol.atol:g}, rtol={tol.rtol:g}; first at {_indices(mismatch, ref.shape)}; largest error "
        f"{float(error.flatten()[worst]):.4g} at {worst_index} (got {float(out_c.flatten()[worst]):.6g}, "
        f"expected {float(ref_c.flatten()[worst]):.6g})"
    )


def _real_pairs(t: torch.Tensor) -> torch.Tensor:
    """A complex tensor as real pairs along a new last dimension (a view; a lazily conjugated one resolved)."""
    return torch.view_as_real(t.resolve_conj())


def _indices(mask: torch.Tensor, shape: torch.Size, limit: int = 3) -> str:
    flat = mask.flatten().nonzero().flatten()[:limit].tolist()
    return ", ".join(str(tuple(int(i) for i in torch.unravel_index(torch.tensor(f), shape))) for f in flat)


def passes_with(ref: torch.Tensor, fake: torch.Tensor, tol: Tolerance) -> bool:
    """Would `fake` (zeros, a constant) pass as the output? Used to find degenerate tasks (degeneracy.py)."""
    if ref.is_complex():
        return passes_with(_real_pairs(ref), _real_pairs(fake.to(ref.dtype).expand_as(ref)), tol)
    if not ref.is_floating_point():
        return bool(torch.equal(ref, fake.to(ref.dtype)))
    # Block by block along dimension 0, with no masked copies: on KernelBench's largest outputs (8 GiB) the
    # whole-tensor form held five times the output at once (docs/design/memory.md).
    for r, f in in_blocks(ref, fake.expand_as(ref)):
        if not bool((torch.isclose(f.to(r.dtype), r, rtol=tol.rtol, atol=tol.atol) | ~torch.isfinite(r)).all()):
            return False
    return True


BLOCK_ELEMENTS = 1 << 26  # 256 MiB of float32 a block: temporaries stay small beside any output


def in_blocks(*tensors: torch.Tensor) -> Iterator[tuple[torch.Tensor, ...]]:
    """Tensors of one shape cut together along dimension 0 into blocks of about BLOCK_ELEMENTS elements
    (views), so that float64 copies and masks of a comparison are made a block at a time; a 0-d tensor is one
    block of one element, an empty one none."""
    first = tensors[0]
    if first.dim() == 0:
        yield tuple(t.reshape(1) for t in tensors)
        return
    rows = max(1, BLOCK_ELEMENTS // max(1, first[0].numel())) if first.shape[0] else 1
    for start in range(0, first.shape[0], rows):
        yield tuple(t[start : start + rows] for t in tensors)
