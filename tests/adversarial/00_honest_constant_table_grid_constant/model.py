"""Per-channel scale plus a scalar shift on an NCHW (16, 64, 128, 128) fp32 tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int, shift: float):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels))
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale.view(1, -1, 1, 1) + self.shift


def get_inputs():
    return [torch.randn(16, 64, 128, 128)]


def get_init_inputs():
    return [64, 0.125]
