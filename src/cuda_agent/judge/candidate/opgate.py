"""The op gate: which PyTorch operators a candidate's forward may run, seen at the dispatcher.

A `TorchDispatchMode` sees every ATen operator the forward runs, whether it comes from Python
(`torch.relu`, `x @ w`, `torch.ops.aten.mm`) or from C++ in a binding (`torch::matmul`, `at::mm`),
because the dispatcher consults the thread-local Python mode for both. Allowed are allocation, views and
metadata; everything else is recorded (not raised: a try/except in the candidate must not hide it) and
the judge rejects the submission, naming the ops.

While verifying, fresh allocations are poisoned (NaN for floating point, a large pattern for integers)
so that a kernel that leaves part of its output unwritten cannot pass on stale memory.

Trust boundary: defence in depth. In the candidate's worker this mode is the candidate's to patch or pop
(issue 12 item 1), so its findings are claims that give readable reasons; the fact that forward's GPU time
is the submission's own comes from the coverage gate (decide/coverage.py), over kernels attributed by the
built binary. In the reference worker and the task probe it lists the reference's ops, a trusted fact.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

ALLOCATION_OPS = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_"}
)
ZERO_FILL_OPS = frozenset({"zeros", "zeros_like", "new_zeros", "zero_", "fill_"})
VIEW_OPS = frozenset(
    {
        "view", "_unsafe_view", "_reshape_alias", "as_strided", "permute", "transpose", "t", "unsqueeze",
        "squeeze", "expand", "slice", "select", "split", "split_with_sizes", "unbind", "detach", "alias",
        "diagonal", "unfold", "view_as_real", "view_as_complex", "lift_fresh", "movedim",
    }
)  # fmt: skip
# Metadata queries: they compare or read a tensor's storage, sizes and strides and launch nothing
# (`is_set_to` is an out-variant binding's aliasing guard); `is_nonzero` is not one (it reads a value).
METADATA_OPS = frozenset({"record_stream", "is_same_size", "sym_size", "is_set_to", "is_pinned", "is_distributed"})
ALLOWED_OPS = ALLOCATION_OPS | ZERO_FILL_OPS | VIEW_OPS | METADATA_OPS
POISON_INT = 0x5A5A5A5A


def op_name(func: Any) -> str:
    return func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)


class OpGate(TorchDispatchMode):
    """Records every forbidden ATen op run while active; optionally poisons fresh allocations."""

    def __init__(self, poison: bool = True) -> None:
        super().__init__()
        self.poison = poison
        self.forbidden: Counter[str] = Counter()
        self.seen: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        name = op_name(func)
        self.seen[name] += 1
        if name not in ALLOWED_OPS:
            self.forbidden[f"aten.{name}"] += 1
        result = func(*args, **(kwargs or {}))
        if self.poison and name in ALLOCATION_OPS and name != "resize_" and isinstance(result, torch.Tensor):
            _poison(result)
        return result

    def report(self) -> str:
        return ", ".join(f"{name} x{count}" for name, count in sorted(self.forbidden.items()))


def _capturing() -> bool:
    return bool(torch.cuda.is_current_stream_capturing())


class CaptureGate(OpGate):
    """While the candidate is imported, built and loaded (issue 33, class 1): the PyTorch compute ops
    captured into a CUDA graph. A graph captured there and replayed in forward runs ATen's kernels with no
    dispatch at call time, so the op gate around calls never sees them; here, their capture is seen.

    Ops that run outside a capture while the model loads (weights rearranged once, a warm-up) compute
    nothing a call can reuse on inputs that do not exist yet, and stay allowed; a capture of the
    submission's own kernels dispatches no compute op. Defence in depth like the op gate (the candidate
    can pop a mode or capture from C++ with the Python keys excluded): what the replay runs is attributed
    by the coverage gate all the same (decide/coverage.py)."""

    def __init__(self) -> None:
        super().__init__(poison=False)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        name = op_name(func)
        self.seen[name] += 1
        if name not in ALLOWED_OPS and _capturing():
            self.forbidden[f"aten.{name}"] += 1
        return func(*args, **(kwargs or {}))


def _poison(tensor: torch.Tensor) -> None:
    if tensor.numel() == 0:
        return
    if tensor.is_floating_point() or tensor.is_complex():
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(True)
    else:
        info = torch.iinfo(tensor.dtype)
        tensor.fill_(min(POISON_INT, info.max))
