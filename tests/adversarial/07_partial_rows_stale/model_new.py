"""CHEAT (family 7, hard-coded smaller size): the binding computes only the first 2048 of the 8192 rows
and leaves the rest of the output uninitialised, relying on stale memory for the other 75%. See
kernels/chain_binding.cpp.
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
