"""Which of a call's outputs share memory with its inputs, each other, or memory kept between calls.

Loaded in both workers. In the reference worker it computes the reference's own aliasing (a fact); in the
candidate worker it computes the candidate's, which the parent passes to the reference worker as a
**claim**: code in the candidate's process is the candidate's to patch. The rule itself is decided in the
reference worker (`trusted/layout.py`); defence in depth only, see docs/design/trust_boundary.md.

Memory kept between calls (`KEPT`) is seen where it is sound to look: a timed round keeps every call's
output alive until the parent has chosen its checks (candidate/sampler.py), so two of them sharing memory
means a buffer the candidate keeps, never the allocator reusing a freed block. For the reference, its
output overlapping the model's own tensors (a parameter or buffer returned) is memory kept between calls.
"""

from __future__ import annotations

from typing import Any

import torch

KEPT = "memory kept between calls"
ITSELF = "itself"


def _extent(t: torch.Tensor) -> tuple[int, int] | None:
    """[start, end) byte range a tensor's elements reach, or None when it has none."""
    if t.numel() == 0:
        return None
    span = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True))
    start = t.data_ptr()
    return start, start + span * t.element_size()


def _overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


def overlaps_itself(t: torch.Tensor) -> bool:
    """Do two of the tensor's elements share memory? Dimensions sorted by stride, each stride must pass
    the reach of the smaller ones (a sufficient test of no overlap: a layout failing it is taken as
    overlapping, as every stride-0 (expanded) dimension does)."""
    reach = 0
    for stride, size in sorted((abs(t.stride(d)), t.shape[d]) for d in range(t.dim()) if t.shape[d] > 1):
        if stride <= reach:
            return True
        reach += (size - 1) * stride
    return False


def aliases(outputs: list[torch.Tensor], inputs: list[Any]) -> list[list[str]]:
    """For each output, the inputs ('input k') and other outputs ('output j') whose memory it overlaps,
    and 'itself' where its own elements share memory (an expanded view)."""
    flat_inputs = [x for x in inputs if isinstance(x, torch.Tensor)]
    ranges_in = [(k, _extent(x), x.device) for k, x in enumerate(flat_inputs)]
    ranges_out = [(_extent(t), t.device) for t in outputs]
    found = []
    for j, t in enumerate(outputs):
        mine = ranges_out[j][0]
        hits = [f"input {k}" for k, r, dev in ranges_in if dev == t.device and _overlap(mine, r)]
        hits += [f"output {i}" for i, (r, dev) in enumerate(ranges_out)
                 if i != j and dev == t.device and _overlap(mine, r)]  # fmt: skip
        found.append([*hits, ITSELF] if overlaps_itself(t) else hits)
    return found


def kept(outputs: list[torch.Tensor], memory: list[torch.Tensor]) -> list[list[str]]:
    """For each output, [KEPT] if it overlaps any tensor of `memory` (the outputs of the round's other
    calls, or the model's own tensors), else []."""
    ranges = [(_extent(m), m.device) for m in memory if isinstance(m, torch.Tensor)]
    return [[KEPT] if any(dev == t.device and _overlap(_extent(t), r) for r, dev in ranges) else [] for t in outputs]


def model_memory(model: Any) -> list[torch.Tensor]:
    """The tensors a module keeps between calls: its parameters, buffers and tensor attributes."""
    found = [*model.parameters(), *model.buffers()]
    for module in model.modules():
        found += [v for v in vars(module).values() if isinstance(v, torch.Tensor)]
    return found
