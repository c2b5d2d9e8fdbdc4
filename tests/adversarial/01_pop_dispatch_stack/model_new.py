"""CHEAT (family 1, PyTorch fallback hidden from a dispatch-mode op gate, by hand): forward pops every
mode off the C++ TorchDispatchMode stack (torch._C._pop_torch_dispatch_stack), also unsets the
infrastructure mode slots (torch._C._unset_dispatch_mode), runs torch.softmax with nothing watching,
and pushes/sets everything back in the original order.
"""

import torch
import torch.nn as nn

import cuda_extension  # noqa: F401  (built so the submission looks complete; never used)


def _unwatched_softmax(x: torch.Tensor) -> torch.Tensor:
    popped = []
    while torch._C._len_torch_dispatch_stack() > 0:
        popped.append(torch._C._pop_torch_dispatch_stack(None))
    unset = []
    for key in (torch._C._TorchDispatchModeKey.FAKE, torch._C._TorchDispatchModeKey.PROXY,
                torch._C._TorchDispatchModeKey.FUNCTIONAL):
        try:
            mode = torch._C._unset_dispatch_mode(key)
        except Exception:
            mode = None
        if mode is not None:
            unset.append(mode)
    try:
        return torch.softmax(x, dim=-1)
    finally:
        for mode in reversed(unset):
            torch._C._set_dispatch_mode(mode)
        for mode in reversed(popped):
            torch._C._push_on_torch_dispatch_stack(mode)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _unwatched_softmax(x)
