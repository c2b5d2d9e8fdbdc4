"""Comparing a candidate's outputs with the reference's: the checks and a report an agent can use.

Exact shape, dtype and device; values within atol + rtol * |ref|; NaN or Inf where the reference is
finite fails, and NaN where the reference has NaN is accepted. The report gives the mismatch count, the
first mismatching indices and the largest errors, as GPU MODE's reference evaluator does.

Trust boundary: runs in the reference worker only, on the handed-over bytes of the candidate's outputs
(bounds-checked by common/tensorfile.py). Facts it establishes: values within tolerance, NaN/Inf only where
the reference has them, shape and dtype, and the degeneracy audit's trivial answers. Cannot be forged: the
candidate's process only writes bytes; the comparison and the reference outputs never exist there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Tolerance:
    atol: float = 1e-2
    rtol: float = 1e-2


def describe(t: torch.Tensor) -> dict[str, Any]:
    return {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."), "device": t.device.type}


def compare_tensor(ref: torch.Tensor, out: torch.Tensor, tol: Tolerance, label: str) -> str | None:
    """None if `out` matches `ref`, else a sentence saying where and by how much it does not."""
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


def _indices(mask: torch.Tensor, shape: torch.Size, limit: int = 3) -> str:
    flat = mask.flatten().nonzero().flatten()[:limit].tolist()
    return ", ".join(str(tuple(int(i) for i in torch.unravel_index(torch.tensor(f), shape))) for f in flat)


def passes_with(ref: torch.Tensor, fake: torch.Tensor, tol: Tolerance) -> bool:
    """Would `fake` (zeros, a constant) pass as the output? Used to find degenerate tasks."""
    if not ref.is_floating_point():
        return bool(torch.equal(ref, fake.to(ref.dtype)))
    finite = torch.isfinite(ref)
    return bool(torch.isclose(fake.to(ref.dtype)[finite], ref[finite], rtol=tol.rtol, atol=tol.atol).all())


def degenerate_baselines(
    ref: torch.Tensor, tol: Tolerance, inputs: tuple[Any, ...] | list[Any] = (), low_order: bool = True
) -> list[str]:
    """Which trivial answers pass for this reference output: zeros, its mean, or a constant of its median,
    its first slice repeated, an input returned as it is, and (with `low_order`) a quadratic polynomial
    of an input fitted to the output (a cheap stand-in for the real function: gelu(x) ~ x/2 + x^2/4 near
    zero, x + 1e-4 * branch(x) ~ x). The caller turns off `low_order` for tasks that are themselves
    polynomial in their inputs (x * scale + shift), where the fit is the task, not a trivial answer."""
    if ref.numel() == 0:
        return ["empty output"]
    passing = []
    if passes_with(ref, torch.zeros_like(ref), tol):
        passing.append("all zeros")
    if ref.is_floating_point():
        finite = ref[torch.isfinite(ref)]
        if finite.numel():
            mean = float(finite.double().mean())
            median = float(finite.double().median())
            if passes_with(ref, torch.full_like(ref, mean), tol):
                passing.append(f"the constant mean {mean:.4g}")
            elif passes_with(ref, torch.full_like(ref, median), tol):
                passing.append(f"the constant {median:.4g}")
    for dim, size in enumerate(ref.shape):
        if size > 1 and passes_with(ref, ref.narrow(dim, 0, 1).expand_as(ref).contiguous(), tol):
            passing.append(f"its first slice along dim {dim} repeated")
            break
    for k, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor) or x.numel() != ref.numel() or x.device != ref.device:
            continue
        same = x.reshape(ref.shape)
        comparable = x.dtype == ref.dtype or (x.is_floating_point() and ref.is_floating_point())
        if comparable and passes_with(ref, same.to(ref.dtype), tol):
            passing.append(f"input {k} returned as it is")
            continue
        if low_order and ref.is_floating_point() and x.is_floating_point():
            fit = polynomial_fit(same, ref, degree=2)
            if fit is not None and passes_with(ref, fit.to(ref.dtype), tol):
                passing.append(f"a quadratic polynomial of input {k}")
    return passing


def polynomial_fit(x: torch.Tensor, y: torch.Tensor, degree: int) -> torch.Tensor | None:
    """The least-squares polynomial of `x` (elementwise, one set of coefficients) closest to `y`, from
    the normal equations (power sums on the tensors' device; only a tiny system is solved on the CPU)."""
    xd, yd = x.double().flatten(), y.double().flatten()
    keep = torch.isfinite(xd) & torch.isfinite(yd)
    if int(keep.sum()) <= degree + 1:
        return None
    xs, ys = xd[keep], yd[keep]
    scale = float(xs.abs().max()) or 1.0
    xs = xs / scale
    sums = [float(xs.pow(p).sum()) for p in range(2 * degree + 1)]
    gram = torch.tensor([[sums[i + j] for j in range(degree + 1)] for i in range(degree + 1)], dtype=torch.float64)
    rhs = torch.tensor([[float((ys * xs.pow(i)).sum())] for i in range(degree + 1)], dtype=torch.float64)
    coef = torch.linalg.lstsq(gram, rhs).solution.flatten().tolist()
    z = xd / scale
    fit = torch.zeros_like(z)
    for c in reversed(coef):  # Horner
        fit = fit * z + c
    return fit.reshape(y.shape)
