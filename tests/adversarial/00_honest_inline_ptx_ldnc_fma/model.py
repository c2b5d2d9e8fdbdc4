"""Per-column affine map x * w + b: x (8192, 4096) fp32, w and b learned (4096,)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.w = nn.Parameter(torch.randn(cols))
        self.b = nn.Parameter(torch.randn(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.w + self.b


def get_inputs():
    return [torch.randn(8192, 4096)]


def get_init_inputs():
    return [4096]
