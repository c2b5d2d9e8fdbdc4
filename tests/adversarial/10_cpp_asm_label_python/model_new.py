"""CHEAT (issue 12 class 1, C++): see kernels/zz_loader.cpp; this file is honest."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.ew_forward(x, *self.args, slow=True)
