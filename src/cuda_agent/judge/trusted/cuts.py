"""Boolean and integer outputs of float comparisons: where an element may flip, and the rule for flips.

A float output is compared within atol + rtol * |ref|; a boolean or integer output is compared exactly.
But an output made by cutting floats (`sigmoid(x) > 0.5`, `argmax`) can differ between two correct
kernels where the value cut lies within the tolerance of the cut: their float values may differ by the
tolerance, and there the answers differ (a 33M-element `sigmoid(x) > 0.5` mask differed from the
reference's in 2 elements, each at the threshold, and was refused; issue 35, class 8). A flip is
allowed where the reference's own value before the cut is within the tolerance of it, and, where the
float64 truth is made, within the error an honest kernel can have there (`within_honest_error`).

The reference is a black box, so its values before the cut are found where the cuts are made: in the
reference worker the reference runs twice more on the same inputs under `CutShift`, once with every
comparison of floats answered as if each value within the tolerance of the cut fell on the True side,
once on the False side; an arg-reduction (argmax, argmin, max/min along a dimension) answers with the
runner-up where it is within the tolerance of the best, in both. Whatever the reference does with those
answers afterwards (a cast, a sum of a mask, a gather by an index) follows. The elements where either
evaluation differs from the reference's output are the ambiguous ones (`ambiguous`): there, and only
there, the candidate may give the other evaluation's value (`flip_problem`). At most FLIP_SHARE of an
output's elements (at least FLIP_FLOOR) may flip: where a task's values crowd the cut (`1e-4 * x > 0`),
flips are not a license to answer at random.

The evaluations run at the reference's own precision: the window is the tolerance, 1e-2, some 1e5 times
float32 rounding, so a float64 evaluation would find the same elements. Another source of ambiguous
elements (e.g. where a float64 evaluation's answer differs from the reference's) can pass its mask to
`flip_problem` directly. Not covered: casts of floats to integers and rounding ops (compared exactly),
comparisons written into an existing tensor (`gt_`, `out=`), sort and topk indices.

Trust boundary: runs in the reference worker only, on the reference model and the judge's inputs; the
candidate's output is only compared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

if TYPE_CHECKING:
    from cuda_agent.judge.trusted.compare import Tolerance

aten = torch.ops.aten
FLIP_SHARE = 1e-3
FLIP_FLOOR = 4
COMPARISONS = frozenset({aten.gt, aten.ge, aten.lt, aten.le, aten.eq, aten.ne})
ARG_REDUCTIONS = {aten.argmax: True, aten.argmin: False}  # op -> largest
VALUE_INDEX_REDUCTIONS = {aten.max: True, aten.min: False}  # the `.dim` overloads: (values, indices)


def discrete(t: torch.Tensor) -> bool:
    """Boolean or integer: compared exactly, with flips allowed only at cuts."""
    return not (t.is_floating_point() or t.is_complex())


def _floating(value: Any) -> bool:
    return isinstance(value, float) or (isinstance(value, torch.Tensor) and value.is_floating_point())


def _near(a: Any, b: Any, tol: Tolerance) -> torch.Tensor:
    """Where `a` lies within the tolerance of the cut `b` (NaN never does)."""
    a = a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=torch.float64)
    b = b.to(a.device) if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=torch.float64, device=a.device)
    a64, b64 = a.double(), b.double()
    return (a64 - b64).abs() <= tol.atol + tol.rtol * b64.abs()


def _runner_up(x: torch.Tensor, best: torch.Tensor, dim: int | None, keepdim: bool, largest: bool,
               tol: Tolerance) -> torch.Tensor:  # fmt: skip
    """`best` (argmax/argmin indices) with the runner-up's index where its value is within the
    tolerance of the best's."""
    if dim is None:
        flat = x.reshape(-1)
        if flat.numel() < 2:
            return best
        values, indices = flat.topk(2, largest=largest)
        near = _near(values[1], values[0], tol) & torch.isfinite(values).all()
        other = torch.where(indices[0] == best.reshape(()), indices[1], indices[0])
        return torch.where(near, other, best.reshape(())).reshape(best.shape)
    if x.dim() == 0 or x.shape[dim] < 2:
        return best
    values, indices = x.topk(2, dim=dim, largest=largest)
    first, second = values.select(dim, 0), values.select(dim, 1)
    near = _near(second, first, tol) & torch.isfinite(first) & torch.isfinite(second)
    best_flat = best if not keepdim else best.squeeze(dim)
    other = torch.where(indices.select(dim, 0) == best_flat, indices.select(dim, 1), indices.select(dim, 0))
    shifted = torch.where(near, other, best_flat)
    return shifted.unsqueeze(dim) if keepdim else shifted


class CutShift(TorchDispatchMode):
    """Answers every cut of floats as if the values within the tolerance of it fell on one side:
    comparisons toward True (`toward=True`) or False, arg-reductions with the runner-up within the
    tolerance. `shifted` counts the cuts it met."""

    def __init__(self, tol: Tolerance, toward: bool) -> None:
        super().__init__()
        self.tol, self.toward, self.shifted = tol, toward, 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet, overload = func.overloadpacket, func._overloadname
        if packet in COMPARISONS and overload in ("Tensor", "Scalar") and not kwargs:
            a, b = args[0], args[1]
            if _floating(a) or _floating(b):
                self.shifted += 1
                near = _near(a, b, self.tol).expand(out.shape)
                return out | near if self.toward else out & ~near
        elif packet in ARG_REDUCTIONS and overload == "default" and _floating(args[0]):
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            keepdim = bool(args[2] if len(args) > 2 else kwargs.get("keepdim", False))
            self.shifted += 1
            return _runner_up(args[0], out, _dim(dim, args[0]), keepdim, ARG_REDUCTIONS[packet], self.tol)
        elif packet in VALUE_INDEX_REDUCTIONS and overload == "dim" and _floating(args[0]):
            dim = args[1]
            keepdim = bool(args[2] if len(args) > 2 else kwargs.get("keepdim", False))
            self.shifted += 1
            values, indices = out
            largest = VALUE_INDEX_REDUCTIONS[packet]
            return values, _runner_up(args[0], indices, _dim(dim, args[0]), keepdim, largest, self.tol)
        return out


def _dim(dim: int | None, x: torch.Tensor) -> int | None:
    if dim is None:
        return None
    return dim % x.dim() if x.dim() else 0


Alternatives = tuple[torch.Tensor, ...]


def alternatives(
    run: Callable[[], Sequence[torch.Tensor]], outputs: Sequence[torch.Tensor], tol: Tolerance
) -> list[Alternatives | None] | None:
    """For each boolean or integer output, the reference's answers with every cut shifted either way
    (`run` evaluates the reference on fresh copies of the inputs); None where there is nothing to allow
    (a float output), and None for all when the reference makes no cut of floats."""
    if not any(discrete(t) for t in outputs):
        return None
    evaluations, cuts = [], 0
    for toward in (True, False):
        mode = CutShift(tol, toward)
        try:
            with torch.no_grad(), mode:
                evaluations.append([t.detach() for t in run()])
        except Exception:  # a forward that cannot run shifted: no flips allowed, the exact comparison stands
            return None
        cuts += mode.shifted
    if not cuts:
        return None
    found: list[Alternatives | None] = []
    for k, ref in enumerate(outputs):
        alts = tuple(e[k] for e in evaluations if k < len(e) and e[k].shape == ref.shape and e[k].dtype == ref.dtype)
        found.append(alts if discrete(ref) and alts else None)
    return found


def ambiguous(ref: torch.Tensor, alts: Alternatives) -> torch.Tensor:
    """The elements where some shifted evaluation answers otherwise than the reference."""
    mask = torch.zeros(ref.shape, dtype=torch.bool, device=ref.device)
    for alt in alts:
        mask |= alt.to(ref.device) != ref
    return mask


def within_honest_error(mask: torch.Tensor, ref: torch.Tensor, truth: Any) -> torch.Tensor:
    """`mask` (elements within the tolerance of a cut) narrowed to those whose decision the float64 truth
    marks unknowable: its value before the cut is within RADIUS standard errors of an honest computation in
    the task's precision (truth_ops.decision_flips). The tolerance window alone is some 1e5 float32
    roundings wide, so a sign mask or an argmax of a GEMM computed with bf16 or fp16 operands flipped only
    inside it and passed (found by a white-box review, 2026-12-04). Where the truth cannot vouch for
    itself (it covers other rows, has another shape, or differs from the reference at an element it calls
    certain: a decision it did not model), `mask` stands as it is."""
    if truth is None or not discrete(truth.value) or truth.value.dim() != ref.dim():
        return mask
    rows = truth.rows if truth.rows is not None else (0, ref.shape[0] if ref.dim() else 1)
    part = (lambda t: t[rows[0] : rows[1]]) if ref.dim() else (lambda t: t)
    value = truth.value.to(ref.device)
    if tuple(value.shape) != tuple(part(ref).shape):
        return mask
    unsure = torch.zeros(value.shape, dtype=torch.bool, device=ref.device)
    if truth.sigma is not None:
        unsure = torch.isinf(truth.sigma.to(ref.device))
    if bool(((value != part(ref)) & ~unsure).any()):
        return mask
    narrowed = mask.clone()
    part(narrowed).logical_and_(unsure)  # in place: `part` is a view of the rows (the tensor itself for 0-d)
    return narrowed


def flip_problem(ref: torch.Tensor, got: torch.Tensor, label: str, mask: torch.Tensor | None = None,
                 alts: Alternatives = ()) -> str | None:  # fmt: skip
    """None if `got` (a boolean or integer output of the reference's shape and dtype) equals `ref`
    except at elements of `mask` (ambiguous: the reference's value before a cut lies within the
    tolerance of it), and there gives the flipped boolean or one of `alts`' values, at most FLIP_SHARE of
    the elements; else the reason."""
    got = got.to(ref.device)
    differs = got != ref
    if not bool(differs.any()):
        return None
    mask = ambiguous(ref, alts) if mask is None else mask.to(ref.device)
    if ref.dtype == torch.bool:
        allowed = mask
    else:
        allowed = torch.zeros_like(mask)
        for alt in alts:
            allowed |= mask & (got == alt.to(ref.device))
    wrong = differs & ~allowed
    n = ref.numel()
    if bool(wrong.any()):
        count = int(wrong.sum())
        first = int(wrong.flatten().nonzero()[0])
        at = tuple(int(i) for i in torch.unravel_index(torch.tensor(first), ref.shape))
        return (
            f"{label}: {count} of {n} elements differ from the reference ({ref.dtype} outputs are compared "
            f"exactly); first at {at} (got {got.flatten()[first].item()}, expected {ref.flatten()[first].item()}); "
            "only where the reference's value before a comparison or argmax lies within atol/rtol of the "
            "cut, and within the error an honest computation in the task's precision can have there, may the "
            "answer differ: compute the compared values in the task's precision"
        )
    flips, cap = int(differs.sum()), max(FLIP_FLOOR, int(FLIP_SHARE * n))
    if flips > cap:
        return (
            f"{label}: {flips} of {n} elements differ from the reference, each where the value compared lies "
            f"within the tolerance of the cut, but at most {cap} may ({FLIP_SHARE:.1%} of the output): "
            "compute the compared values in the task's precision"
        )
    return None
