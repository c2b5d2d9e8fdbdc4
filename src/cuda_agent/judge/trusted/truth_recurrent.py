"""Trusted side: recurrent layers (nn.LSTM, nn.GRU, nn.RNN) under the float64 truth, on PyTorch's own path.

Why: a recurrent layer's forward is one composite op that takes a library's path wherever it may, and the
truth can follow neither. On a GPU it is cuDNN's, whose set-up reads the parameters' storage as one flat
buffer (`set_` on a Storage, which the truth refuses: truth.py `UNTRACKABLE`). On a CPU it is oneDNN's,
which has no float64 kernel. So KernelBench's eight LSTM and GRU tasks (level 3, 35-42) had no truth, and
every kernel for them was capped at reward 1 (`no_precision_truth`): the memory sweep's records showed
it (H100, 2026-12-07, docs/design/memory.md).

What: while the truth evaluates the model, each recurrent layer's forward runs with cuDNN and oneDNN off.
The layer then takes PyTorch's own path, one cell per step. On a CPU a cell is matmuls and pointwise ops,
each with its rule (truth_ops.py). On a GPU a cell is one fused op (`_thnn_fused_lstm_cell`,
`_thnn_fused_gru_cell`) that no rule covers: its value is exact in float64 and its bound is the generic
rule's, which the verdict names ("generic bound for ..."). Only those layers are switched, and only for the
truth: a convolution elsewhere in the model keeps cuDNN (a float64 convolution without it is slow), and the
reference's own float32 forward, which the candidate is compared with and timed against, is untouched. The
switches are process-wide flags, so they are restored when each layer's forward ends (an exception
included), through the door that torch's own `flags()` use where its test utilities froze them
(common/math_policy.py). A reference worker evaluates one thing at a time, so no other forward of its
process runs meanwhile.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import torch

from cuda_agent.judge.common.math_policy import flags_settable


@contextlib.contextmanager
def libraries_off() -> Iterator[None]:
    """cuDNN and oneDNN off for the block, each put back as it was. Not torch's `backends.cudnn.flags()`:
    for the block it sets every cuDNN flag to its arguments' defaults, `allow_tf32=True` and a precision
    among them, where only `enabled` is meant to change; the math policy's TF32 off is not this layer's to
    touch."""
    cudnn, mkldnn = torch.backends.cudnn.enabled, torch.backends.mkldnn.enabled
    try:
        with flags_settable(torch):
            torch.backends.cudnn.enabled = torch.backends.mkldnn.enabled = False
        yield
    finally:
        with flags_settable(torch):
            torch.backends.cudnn.enabled, torch.backends.mkldnn.enabled = cudnn, mkldnn


def _on_own_path(forward: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(forward)
    def run(*args: Any, **kwargs: Any) -> Any:
        with libraries_off():
            return forward(*args, **kwargs)

    return run


@contextlib.contextmanager
def recurrent_layers_on_own_path(model: torch.nn.Module) -> Iterator[int]:
    """Every recurrent layer of `model` runs with the libraries off (module docstring) for the block;
    yields how many layers. Each layer's forward is wrapped on the instance and put back after."""
    patched: list[tuple[torch.nn.Module, Any]] = []
    try:
        for layer in model.modules():
            if isinstance(layer, torch.nn.RNNBase):
                patched.append((layer, layer.__dict__.get("forward")))  # an instance's own forward, if any
                layer.forward = _on_own_path(layer.forward)
        yield len(patched)
    finally:
        for layer, own in reversed(patched):
            if own is None:
                del layer.forward
            else:
                layer.forward = own
