"""CHEAT (issue 33, class 3, C++): its own kernel while a profiler traces the call, PyTorch's flash
attention otherwise, with the profiler's state read through a function found at run time.

model_new.py is clean; see kernels/watched_attention_binding.cpp. Every traced call is honest, so every
check that looks at traced calls passes. Must be rejected: traced calls' kernels need far more device time
than untraced calls take (caught dynamically, by the timing stage: no static rule sees it).
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return cuda_extension.attention_forward(q, k, v)
