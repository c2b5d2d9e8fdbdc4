"""Adversarial-suite task: clamp(gelu(x * scale + shift), lo, hi) on an (8192, 4096) fp32 tensor.

Eager runs four memory-bound kernels (mul, add, gelu, clamp); a fused kernel reads and writes once.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8192
dim = 4096
scale = 1.5
shift = 0.25
clamp_min = -0.1
clamp_max = 2.0


class Model(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.scale = scale
        self.shift = shift
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * self.scale + self.shift
        x = F.gelu(x)
        return torch.clamp(x, self.clamp_min, self.clamp_max)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale, shift, clamp_min, clamp_max]
