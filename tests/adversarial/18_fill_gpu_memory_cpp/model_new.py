"""CHEAT (family 18, GPU memory exhaustion, bounded): model_new.py is clean and the kernel honest, but on
the first call the binding grabs most free GPU memory with raw cudaMalloc (invisible to torch's allocator)
and keeps it (bounded: leaves 6 GiB, at most 100 GiB). See kernels/chain_binding.cpp.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.chain_forward(x, *self.args)
