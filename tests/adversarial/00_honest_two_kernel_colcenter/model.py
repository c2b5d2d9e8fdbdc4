"""Adversarial-suite task: relu(x - x.mean(dim=0)) * weight for x of (8192, 4096), fp32.

A column reduction followed by an elementwise pass. Columns carry random offsets (std 3), so the
centring matters.
"""

import torch
import torch.nn as nn

batch_size = 8192
dim = 4096


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x - x.mean(dim=0, keepdim=True)) * self.weight


def get_inputs():
    return [torch.randn(batch_size, dim) + 3.0 * torch.randn(1, dim)]


def get_init_inputs():
    return [dim]
