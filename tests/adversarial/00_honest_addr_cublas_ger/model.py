"""Rank-1 update A + x y^T: A (4096, 4096), x (4096,), y (4096,), fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.addr(a, x, y)


def get_inputs():
    return [torch.randn(4096, 4096), torch.randn(4096), torch.randn(4096)]


def get_init_inputs():
    return []
