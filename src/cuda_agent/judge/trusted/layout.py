"""Output layout rule: the reference's strides and no memory shared beyond the reference's, for the 'no views instead of work' rule.

Returning `x.t()` or `x.narrow(...)` where the reference materialises a transpose or a slice does no work
at all and compares equal. So an output must have the reference's strides (over dimensions longer than
one) and may share memory with an input or another output only where the reference's output does.

Where each fact is established: strides travel inside the handed-over tensor file and are read by the
reference worker; the aliasing facts are computed by `candidate/aliasing.py` in the candidate worker (from
data pointers of the call's inputs and outputs) and, for the reference, in the reference worker.
The rule is decided here, in the reference worker (`problem`), but both inputs of it about the candidate
(the strides in the tensor file's header and the aliasing report) are written by judge code in the
candidate's process: they are **claims**, as trustworthy as that code once the candidate patches it. This
rule is defence in depth: a candidate that patched its hand-over to write a materialised copy would pass
it while returning views (docs/design/trust_boundary.md, "What is still a claim"); the values must still be
right.
"""

from __future__ import annotations

import torch


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
