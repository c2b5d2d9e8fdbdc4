"""Output layout facts: strides and which tensors share memory, for the 'no views instead of work' rule.

Returning `x.t()` or `x.narrow(...)` where the reference materialises a transpose or a slice does no work
at all and compares equal. So an output must have the reference's strides (over dimensions longer than
one) and may share memory with an input or another output only where the reference's output does.

Where each fact is established: strides travel inside the handed-over tensor file and are read by the
reference worker; the aliasing facts are computed in the candidate worker by the judge's hand-over code
(from data pointers of the call's inputs and outputs) and, for the reference, in the reference worker.
The rule is decided in the reference worker (`problem`). The candidate-side facts are as trustworthy as
the judge's code in that process (see docs/design/trust_boundary.md); a candidate that forged them would
still have to hand over the right values, which a view cannot give once strides are compared.
"""

from __future__ import annotations

from typing import Any

import torch


def _extent(t: torch.Tensor) -> tuple[int, int] | None:
    """[start, end) byte range a tensor's elements reach, or None when it has none."""
    if t.numel() == 0:
        return None
    span = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True))
    start = t.data_ptr()
    return start, start + span * t.element_size()


def _overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


def aliases(outputs: list[torch.Tensor], inputs: list[Any]) -> list[list[str]]:
    """For each output, the inputs ('input k') and other outputs ('output j') whose memory it overlaps."""
    flat_inputs = [x for x in inputs if isinstance(x, torch.Tensor)]
    ranges_in = [(k, _extent(x), x.device) for k, x in enumerate(flat_inputs)]
    ranges_out = [(_extent(t), t.device) for t in outputs]
    found = []
    for j, t in enumerate(outputs):
        mine = ranges_out[j][0]
        hits = [f"input {k}" for k, r, dev in ranges_in if dev == t.device and _overlap(mine, r)]
        hits += [f"output {i}" for i, (r, dev) in enumerate(ranges_out)
                 if i != j and dev == t.device and _overlap(mine, r)]  # fmt: skip
        found.append(hits)
    return found


def significant_strides(t: torch.Tensor) -> tuple[tuple[int, int], ...]:
    """(dimension, stride) for every dimension longer than one: the others' strides carry no meaning."""
    return tuple((d, st) for d, (s, st) in enumerate(zip(t.shape, t.stride(), strict=True)) if s > 1)


def problem(ref: torch.Tensor, got: torch.Tensor, ref_aliases: list[str], got_aliases: list[str],
            label: str) -> str | None:  # fmt: skip
    """None if `got` is laid out like `ref` and aliases nothing `ref` does not, else the reason."""
    if significant_strides(got) != significant_strides(ref):
        return (
            f"{label} has strides {tuple(got.stride())}, the reference's are {tuple(ref.stride())}: return "
            "a tensor laid out like the reference's (a view of an input is not the work)"
        )
    extra = sorted(set(got_aliases) - set(ref_aliases))
    if extra:
        return (
            f"{label} shares memory with {', '.join(extra)}, which the reference's output does not: write "
            "the result into memory of its own"
        )
    return None
