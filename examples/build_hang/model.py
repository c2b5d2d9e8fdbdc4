"""Reference: a chain of elementwise ops on one large tensor.

y = clamp(gelu(x * scale + shift), clamp_min, clamp_max), with the exact (erf) GELU.
Eager PyTorch runs four memory-bound kernels (mul, add, gelu, clamp), each reading and writing 512 MiB.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16384
dim = 8192
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
