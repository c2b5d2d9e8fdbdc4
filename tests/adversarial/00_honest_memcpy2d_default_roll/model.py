"""Adversarial-suite task: torch.roll of a (4096, 4096) fp32 matrix by 1000 columns to the left.

Pure data movement: out[:, :C - s] = x[:, s:] and out[:, C - s:] = x[:, :s].
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.roll(x, shifts=-1000, dims=1)


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
