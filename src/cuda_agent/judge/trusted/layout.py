"""Output memory rule: no output shares memory the reference's output does not (views instead of work).

Outputs are compared by logical index: a contiguous output where the reference returns a transposed view
(`(x * w).t()`) is as right as the view, and its strides do not matter (SKILL.md asks for shape, dtype and
device; KernelBench compares values). What stays refused is a real hazard, whatever the strides:
- an output sharing memory with an input (`x.t()`, `x.narrow(...)`, `x.expand(...)` returned where the
  reference materialises them: no work at all, and the values compare equal);
- an output sharing memory with another output (one result returned twice where the reference returns
  two tensors: half the writes);
- an output whose own elements share memory (`row.expand(n, -1)` where the reference materialises the
  repeat: 1/n of the writes);
- an output sharing memory with the output of another call of the same timed round (memory the
  candidate keeps between calls: `aliasing.KEPT`);
each unless the reference's output does the same (`(y, y.t())`, an in-place update returned, a parameter
returned).

Where each fact is established: the aliasing reports are computed by `candidate/aliasing.py` in the
candidate worker (from data pointers of the call's inputs, outputs and the round's other outputs) and,
for the reference, in the reference worker (from its raw outputs: the copy it keeps of an expanded output
is contiguous); the strides that show a candidate output's own overlap travel in the tensor file's header
too, and are checked whatever the report says. The rule is decided here, in the reference worker (`problem`), but its inputs about
the candidate are written by judge code in the candidate's process: they are **claims**, as trustworthy
as that code once the candidate patches it. This rule is defence in depth (docs/design/trust_boundary.md,
"What is still a claim"); the values must still be right.
"""

from __future__ import annotations

import torch

from cuda_agent.judge.candidate.aliasing import ITSELF, overlaps_itself


def significant_strides(t: torch.Tensor) -> tuple[tuple[int, int], ...]:
    """(dimension, stride) for every dimension longer than one: the others' strides carry no meaning."""
    return tuple((d, st) for d, (s, st) in enumerate(zip(t.shape, t.stride(), strict=True)) if s > 1)


def problem(ref: torch.Tensor, got: torch.Tensor, ref_aliases: list[str], got_aliases: list[str],
            label: str) -> str | None:  # fmt: skip
    """None if `got` shares no memory that `ref` does not, else the reason."""
    extra = sorted(set(got_aliases) - set(ref_aliases))
    if extra:
        return (
            f"{label} shares memory with {', '.join(extra)}, which the reference's output does not: write "
            "the result into memory of its own, allocated in this call"
        )
    if overlaps_itself(got) and ITSELF not in ref_aliases:  # from the header's strides, whatever the report
        return (
            f"{label} has elements that share memory (strides {tuple(got.stride())} for shape "
            f"{tuple(got.shape)}, an expanded or broadcast view) where the reference's output has its own "
            "memory for each: write every element"
        )
    return None
