"""Trusted side: every input the reference reads must matter on every draw (issue 35, class 2).

Why. Verification compares the candidate with the reference on fresh draws of the task's inputs. An input
that, at the magnitudes get_inputs() draws, changes the output by less than the tolerance (a term scaled
by 1e-6; a scalar loss or a global mean, whose value concentrates as the tensor grows) can be ignored by a
kernel that then skips all the work on it and still passes every draw (a kernel ignoring two of three
inputs was rewarded +3 at 71x).

What, per tensor input position k, on draws made here from secret seeds (never handed to anyone):

1. Draw input k again (five other draws, the other inputs as in the first): if no three of the six
   outputs are mutually within `margin` (4) x the tolerance, an answer that ignores input k passes at
   most two of the six (passing three needs them within about 2 x the tolerance of each other): the
   input matters as drawn. (At most one of four, all pairs apart, proved too strict: four draws of a
   scalar term often hold one close pair by chance.)
2. If not, try transforms of the draw, in order, until one makes it matter that way: a factor per draw,
   log-uniform in [1/spread, spread] (a loss that concentrates at one scale does not at several; for an
   input all in [0, 1], a probability or a mask, [1/spread^2, 1], so it stays in its range), then fixed
   scales 10, 100, ... (a term with a tiny coefficient; not for [0, 1] inputs nor integers). A transform
   that makes the output non-finite or the forward raise is not used, nor any larger scale, nor one whose
   largest factor times HEADROOM (4) does (later draws reach further into the tails than six).
   The transforms found are applied to every draw of both workers (candidate/inputs.py: draw_inputs), in
   verification, warm-up and timed calls alike: no call looks different from another, so a kernel cannot
   tell which calls would show that it ignores an input.
3. If none does, does the output depend on input k at all (any draw changes it beyond the reference's own
   run-to-run noise)? Yes: the input is *weak* (reported, not refused: e.g. a loss whose dependence on
   it averages out, such as the target of BCE-with-logits on zero-mean logits, which no scaling of the
   draw makes move beyond the tolerance). No: if the reference's Python passes input k only to functions
   that read its shape (`k.shape`, `k.size(0)`, `torch.zeros_like(k)`, views), it is used *for its shape*:
   reported, and a kernel may do the same. Otherwise (never used, or its values read without effect, as in
   `0 * k`) the reference *ignores* it and the task is a task_error (`InputAudit.problem`): a task that
   asks for an input it does not use cannot tell a kernel that reads it from one that does not.

LayerNorm (scale-invariant) and softmax (shift-invariant) are not touched: a fresh draw of their input
changes their output, step 1. An input every draw of which is the same (a constant table) is reported as
constant and left as it is.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from cuda_agent.judge.candidate.inputs import IDENTITY, InputTransform
from cuda_agent.judge.trusted.audit import all_finite, differs, explained_by, outputs_or_none
from cuda_agent.judge.trusted.compare import Tolerance, in_blocks
from cuda_agent.task import flatten_tensors, tensor_bytes

SPREAD = 2.0  # per-draw factors in [1/SPREAD, SPREAD]
MAX_SCALE_EXPONENT = 6  # fixed scales up to 10^6
HEADROOM = 4.0  # a transform is used only if 4 x its largest factor still leaves the output finite
AUDIT_DRAWS = 6  # the first draw and five others of each input
# Torch functions, tensor methods and properties that read a tensor's shape, dtype or device but not its
# values (`__get__` is every property: `.shape`, `.dtype`, `.T`; views share the input's memory, so what
# reads them is seen too): an input passed only to these is used for its shape.
SHAPE_FUNCTIONS = frozenset(
    {"__get__", "__len__", "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset",
     "element_size", "is_contiguous", "is_floating_point", "is_complex", "get_device", "zeros_like",
     "ones_like", "empty_like", "full_like", "new_zeros", "new_ones", "new_empty", "new_full", "view",
     "view_as", "reshape", "reshape_as", "expand", "expand_as", "t", "transpose", "permute", "unsqueeze",
     "squeeze", "flatten", "unflatten", "narrow", "detach", "unbind", "split", "chunk", "movedim"}
)  # fmt: skip


@dataclass
class InputAudit:
    transforms: list[InputTransform] = field(default_factory=list)  # one per input position
    matter: list[str] = field(default_factory=list)  # matter as drawn
    made_to_matter: dict[str, dict[str, Any]] = field(default_factory=dict)  # label -> the transform
    weak: list[str] = field(default_factory=list)
    shape_only: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    constant: list[str] = field(default_factory=list)
    unaudited: dict[str, str] = field(default_factory=dict)  # label -> why

    def report(self) -> dict[str, Any]:
        return {"matter": self.matter, "made_to_matter": self.made_to_matter, "weak": self.weak,
                "shape_only": self.shape_only, "ignored": self.ignored, "constant": self.constant,
                "unaudited": self.unaudited}  # fmt: skip

    def active(self) -> list[InputTransform] | None:
        """The transforms for draw_inputs, or None when every one is the identity."""
        return list(self.transforms) if any(tuple(t) != IDENTITY for t in self.transforms) else None

    def problem(self) -> str | None:
        """The task_error reason when the reference ignores an input."""
        if not self.ignored:
            return None
        names = ", ".join(self.ignored)
        return (
            f"the reference's output does not depend on {names} (get_inputs() position): drawn again, and "
            f"scaled by up to 10^{MAX_SCALE_EXPONENT}, it leaves the output unchanged, so the task cannot tell "
            "a kernel that reads it from one that does not; use it in forward or remove it from get_inputs()"
        )


def label(position: int) -> str:
    return f"input {position}"


def _largest_change(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """The largest elementwise change between two output lists (inf where a shape, a NaN pattern or an
    integer value differs): how much the output moved."""
    if len(a) != len(b):
        return float("inf")
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape or x.dtype != y.dtype:
            return float("inf")
        if x.numel() == 0:
            continue
        if not x.is_floating_point():
            if not torch.equal(x, y):
                return float("inf")
            continue
        for xb, yb in in_blocks(x, y):  # float64 copies of a block at a time, not of the whole output
            xd, yd = xb.double(), yb.double()
            same = (xd == yd) | (torch.isnan(xd) & torch.isnan(yd))
            if bool(same.all()):
                continue
            diff = (xd - yd).abs().masked_fill(same, 0)
            worst = max(worst, float(diff.nan_to_num(nan=float("inf")).max()))
    return worst


def factors(transform: InputTransform, count: int) -> list[float]:
    """The audit's factors for `count` draws: the transform's range at evenly spaced points of its log
    scale (the draws themselves take a random point each, candidate/inputs.py: draw_factor)."""
    scale, low, high = transform
    if low == high or count == 1:
        return [scale * low] * count
    return [scale * low * (high / low) ** (j / (count - 1)) for j in range(count)]


def transforms_to_try(column: Sequence[torch.Tensor]) -> list[InputTransform]:
    """The identity, then per-draw factors, then fixed scales (not for integers, nor for [0, 1] inputs)."""
    if not column[0].is_floating_point():
        return [IDENTITY]
    bounded = all(bool((c >= 0).all()) and bool((c <= 1).all()) for c in column)
    if bounded:
        return [IDENTITY, (1.0, 1.0 / SPREAD**2, 1.0)]
    scales = [(10.0**e, 1.0, 1.0) for e in range(1, MAX_SCALE_EXPONENT + 1)]
    return [IDENTITY, (1.0, 1.0 / SPREAD, SPREAD), *scales]


class _Uses(TorchFunctionMode):
    """The names of the torch functions (and tensor methods and properties) that receive a tensor sharing
    the memory of the audited input: seen where the task's Python calls them, so `x.shape` counts too."""

    def __init__(self, storage: int) -> None:
        super().__init__()
        self.storage = storage
        self.names: set[str] = set()

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        for t in flatten_tensors([list(args), dict(kwargs or {})]):
            try:
                shared = t.untyped_storage().data_ptr() == self.storage
            except Exception:  # a tensor without storage (sparse, meta) is not the input
                shared = False
            if shared:
                self.names.add(getattr(func, "__name__", str(func)))
                break
        return func(*args, **(kwargs or {}))


def usage(model: torch.nn.Module, inputs: Sequence[Any], position: int) -> str:
    """How the reference uses input `position` in one forward: "unused" (never passed to torch), "shape"
    (only to SHAPE_FUNCTIONS: its shape, dtype, views, allocations like it) or "values" (anything else,
    copies included, since what is done with a copy is not followed)."""
    fresh = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    target = fresh[position]
    if target.numel() == 0:  # no values to read (and no memory of its own to follow)
        return "shape"
    mode = _Uses(target.untyped_storage().data_ptr())
    try:
        with torch.no_grad(), mode:
            model(*fresh)
    except Exception:
        return "values"
    if not mode.names:
        return "unused"
    return "shape" if mode.names <= SHAPE_FUNCTIONS else "values"


class DrawnOnDemand(Sequence):
    """The audit's draws made again from their seeds each time one is read, so that only one or two are
    alive beside the first (the one read and, while it is drawn, the last one a loop held): for a task
    whose six draws would not fit in what the audit may hold (KernelBench's largest: six 16 GiB input
    sets). `seeds[0]` is the first draw's. A task whose inputs a seed does not reproduce gets other values
    at each read, each of them a draw of the task all the same."""

    def __init__(self, first: Sequence[Any], draw: Callable[[int], list[Any]], seeds: Sequence[int]) -> None:
        self.first, self.draw, self.seeds = list(first), draw, list(seeds)

    def __len__(self) -> int:
        return len(self.seeds)

    def __getitem__(self, j: int) -> list[Any]:  # type: ignore[override]
        return self.first if j == 0 else self.draw(self.seeds[j])

    def column(self, k: int) -> Sequence[torch.Tensor]:
        return _Column(self, k)


def audit_sets(first: Sequence[Any], draw: Callable[[int], list[Any]], seeds: Sequence[int],
               hold_bytes: float | None) -> Sequence[Sequence[Any]]:  # fmt: skip
    """The audit's AUDIT_DRAWS draws (`first`, then one per seed after `seeds[0]`): all held, or, where that
    would be over `hold_bytes` (None: no limit), a DrawnOnDemand. `audit_inputs` makes the same choice for
    the outputs."""
    if hold_bytes is not None and AUDIT_DRAWS * tensor_bytes(list(first)) > hold_bytes:
        return DrawnOnDemand(first, draw, seeds)
    return [list(first), *(draw(seed) for seed in seeds[1:])]


class _Column(Sequence):
    """Input `k` of each of a DrawnOnDemand's draws, drawn when read."""

    def __init__(self, sets: DrawnOnDemand, k: int) -> None:
        self.sets, self.k = sets, k

    def __len__(self) -> int:
        return len(self.sets)

    def __getitem__(self, j: int) -> torch.Tensor:  # type: ignore[override]
        return self.sets[j][self.k]


def audit_inputs(
    model: torch.nn.Module,
    sets: Sequence[Sequence[Any]],
    tol: Tolerance,
    margin: float = 4.0,
    budget_s: float = 20.0,
    clock: Callable[[], float] = time.monotonic,
    hold_bytes: float | None = None,
) -> InputAudit:
    """Audit every tensor input position of `sets` (AUDIT_DRAWS raw draws, without transforms); see the
    module docstring. The model's state is not changed.

    Memory: `sets` may be a DrawnOnDemand (no draw kept beyond the first); where AUDIT_DRAWS outputs would
    be over `hold_bytes` (None: no limit), outputs are compared two at a time, each made again when needed
    (`_trial`), so the audit holds about the first draw, one other, and two outputs.

    Inputs are audited in order, each with the transforms chosen so far applied to the others (at the
    middle of their range): scaling one input must not leave another one mattering only in an audit that
    never sees the two together (relu(x) + 1e-5 * a @ b: once a is scaled, b matters as drawn). At the end,
    with every transform in place, each input found to matter is checked again: one drowned by another's
    scale is reported as weak."""
    began = clock()
    wide = Tolerance(tol.atol * margin, tol.rtol * margin)
    first = list(sets[0])
    result = InputAudit(transforms=[IDENTITY] * len(first))
    base = outputs_or_none(model, first)
    again = outputs_or_none(model, first)
    if base is None or again is None or differs(base, again, tol):
        for k, value in enumerate(first):
            if isinstance(value, torch.Tensor):
                result.unaudited[label(k)] = "the reference does not give one output for one input"
        return result
    floor = _largest_change(base, again)  # the reference's own run-to-run noise (atomics)
    lean = hold_bytes is not None and AUDIT_DRAWS * tensor_bytes(base) > hold_bytes
    finite = all_finite(base)
    del base, again
    columns: dict[int, Sequence[torch.Tensor]] = {}
    for k, value in enumerate(first):
        if isinstance(value, list | tuple | dict) and flatten_tensors(value):
            result.unaudited[label(k)] = "a collection of tensors (only top-level tensor inputs are audited)"
        if not isinstance(value, torch.Tensor):
            continue
        column = sets.column(k) if isinstance(sets, DrawnOnDemand) else [s[k] for s in sets]
        if any(not isinstance(c, torch.Tensor) or c.shape != value.shape or c.dtype != value.dtype for c in column):
            result.unaudited[label(k)] = "its draws differ in shape or dtype"
        elif all(torch.equal(column[0], column[j]) for j in range(1, len(column))):
            result.constant.append(label(k))
        elif columns and clock() - began > budget_s:  # the first input is always audited
            result.unaudited[label(k)] = f"the input audit's {budget_s:g} s were spent"
        else:
            columns[k] = column
            others = _others_transformed(first, result.transforms, k)
            _audit_one(model, others, k, column, floor, wide, finite, result, lean)
    if result.active() is not None:
        _recheck(model, first, columns, wide, finite, result, lean)
    return result


def _others_transformed(first: list[Any], transforms: list[InputTransform], k: int) -> list[Any]:
    """The first draw with every input but `k` multiplied by the middle of its transform's range."""
    out = list(first)
    for j, transform in enumerate(transforms):
        if j != k and tuple(transform) != IDENTITY and isinstance(out[j], torch.Tensor) and out[j].is_floating_point():
            scale, low, high = transform
            out[j] = out[j] * (scale * (low * high) ** 0.5)
    return out


def _trial(
    model: torch.nn.Module, first: list[Any], k: int, column: Sequence[torch.Tensor], transform: InputTransform,
    wide: Tolerance, finite: bool, lean: bool = False,
) -> tuple[bool, bool, float]:  # fmt: skip
    """Input `k` drawn AUDIT_DRAWS times under `transform`, the others as in `first`: (usable: no forward
    raised and, where the task's own draw gives a `finite` output, every output is finite; matters: no
    three outputs are mutually within `wide`; where it does not, the largest change of any output from the
    first's, for weak versus ignored).

    `lean` (outputs too large to hold six at once: `audit_inputs`): each pair is compared with two outputs
    alive at a time, each made again when needed (6 + 15 forwards instead of 6)."""
    scaled = factors(transform, len(column))

    def output(j: int) -> list[torch.Tensor] | None:
        trial = list(first)
        trial[k] = column[j] * scaled[j] if scaled[j] != 1.0 else column[j]
        out = outputs_or_none(model, trial)
        return None if out is None or (finite and not all_finite(out)) else out

    n = len(column)
    if not lean:
        outs = []
        for j in range(n):
            out = output(j)
            if out is None:
                return False, False, 0.0
            outs.append(out)
        close = {(i, j): not differs(outs[i], outs[j], wide) for i, j in itertools.combinations(range(n), 2)}
        if not three_close(close, n):
            return True, True, 0.0  # the change is asked for only where the input does not matter
        return True, False, max((_largest_change(outs[0], o) for o in outs[1:]), default=0.0)
    close = {}
    for i in range(n - 1):
        a = output(i)
        if a is None:
            return False, False, 0.0
        for j in range(i + 1, n):
            b = output(j)
            if b is None:
                return False, False, 0.0
            close[(i, j)] = not differs(a, b, wide)
            del b
        del a
    if not three_close(close, n):
        return True, True, 0.0
    a = output(0)
    return True, False, max((_largest_change(a, b) for b in map(output, range(1, n)) if b is not None), default=0.0)


def three_close(close: dict[tuple[int, int], bool], n: int) -> bool:
    """Are three outputs mutually close (every pair within `wide`)? An answer passing three of them would
    make them so (within about 2 x the tolerance of each other); if none are, an answer that ignores the
    input passes at most two of the draws."""
    return any(close[(i, j)] and close[(i, m)] and close[(j, m)] for i, j, m in itertools.combinations(range(n), 3))


def _audit_one(
    model: torch.nn.Module, first: list[Any], k: int, column: Sequence[torch.Tensor], floor: float, wide: Tolerance,
    finite: bool, result: InputAudit, lean: bool = False,
) -> None:  # fmt: skip
    moved = False
    for transform in transforms_to_try(column):
        usable, matters, change = _trial(model, first, k, column, transform, wide, finite, lean)
        if not usable:
            if transform[0] > 1.0:
                break  # a larger scale would break it more
            continue
        moved = moved or change > 10 * floor  # did it move the output at all (for weak versus ignored)?
        if matters and transform != IDENTITY and not _has_headroom(model, first, k, column[0], transform, finite):
            break  # later draws, further out in the tails, could overflow: a larger scale would too
        if matters:
            if transform == IDENTITY:
                result.matter.append(label(k))
            else:
                result.transforms[k] = transform
                result.made_to_matter[label(k)] = {"scale": transform[0], "factor": [transform[1], transform[2]]}
            return
    if moved:
        result.weak.append(label(k))
    elif usage(model, first, k) == "shape":
        result.shape_only.append(label(k))
    else:
        result.ignored.append(label(k))


def _has_headroom(
    model: torch.nn.Module, first: list[Any], k: int, value: torch.Tensor, transform: InputTransform, finite: bool
) -> bool:
    """Does the output stay finite (and the forward run) with input k at HEADROOM times the transform's
    largest factor? Six draws do not reach the tails of every later one (an fp16 product scaled close
    to 65504). A transform that only shrinks (a [0, 1] input's) needs none, and must keep its range."""
    if transform[0] * transform[2] <= 1.0:
        return True
    trial = list(first)
    trial[k] = value * (transform[0] * transform[2] * HEADROOM)
    out = outputs_or_none(model, trial)
    return out is not None and (not finite or all_finite(out))


def _recheck(
    model: torch.nn.Module, first: list[Any], columns: dict[int, Sequence[torch.Tensor]], wide: Tolerance,
    finite: bool, result: InputAudit, lean: bool = False,
) -> None:  # fmt: skip
    """With every transform in place, each input found to matter must still matter; one that no longer
    does (drowned by another input's scale) is moved to `weak`. Inputs audited after the last transform
    was chosen saw them all already, and are not run again."""
    last = max(k for k, t in enumerate(result.transforms) if tuple(t) != IDENTITY)
    for k, column in columns.items():
        name = label(k)
        if k >= last or (name not in result.matter and name not in result.made_to_matter):
            continue
        _, matters, _ = _trial(model, _others_transformed(first, result.transforms, k), k, column,
                               result.transforms[k], wide, finite, lean)  # fmt: skip
        if not matters:
            result.weak.append(name)
            if name in result.matter:
                result.matter.remove(name)
INPUT_HINT = (
    "the judge draws {names} scaled so that each changes the output beyond the tolerance on every draw "
    "(SKILL.md, 'Parameters and inputs'): a kernel must read every input the reference reads"
)


def explain(
    model: torch.nn.Module, raw_inputs: Sequence[Any], produced: Sequence[torch.Tensor], tol: Tolerance,
    audit: InputAudit,
) -> str | None:
    """After a failed comparison on a draw whose inputs were transformed: when the candidate's outputs
    are what the reference gives on the draw *without* the transforms (get_inputs() as written), the
    kernel ignored (or assumed the scale of) an input the judge made matter. A sentence, or None."""
    if not audit.made_to_matter:
        return None
    names = ", ".join(audit.made_to_matter)
    return explained_by(model, raw_inputs, produced, tol, "the outputs are what the reference gives on the inputs "
                        "as get_inputs() draws them: " + INPUT_HINT.format(names=names))  # fmt: skip
