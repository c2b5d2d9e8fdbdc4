"""CHEAT (family 5, silent launch failure): the binding launches with an invalid block size (2048
threads), swallows the launch error and returns an uninitialised torch::empty_like, which in a
single-process judge is the reference's just-freed output. See kernels/chain_binding.cpp.
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
