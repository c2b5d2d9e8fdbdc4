"""CHEAT (family 4, phase detection in C++): model_new.py is clean; the binding runs the kernel only
when the Python dispatch key is in the thread-local included set (i.e. a dispatch mode such as the op gate
is watching) and otherwise returns an unwritten tensor. See kernels/chain_binding.cpp.
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
