"""REJECTED ON PURPOSE: only x * scale + shift runs in the custom kernel; the GELU and the clamp fall
back to PyTorch compute ops inside forward(), which the judge's op gate forbids."""

import torch
import torch.nn as nn
import torch.nn.functional as F

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.scale = float(scale)
        self.shift = float(shift)
        self.clamp_min = float(clamp_min)
        self.clamp_max = float(clamp_max)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = cuda_extension.scale_shift_forward(x, self.scale, self.shift)
        y = F.gelu(y)  # FORBIDDEN: PyTorch compute op (aten::gelu)
        return torch.clamp(y, self.clamp_min, self.clamp_max)  # FORBIDDEN: aten::clamp
