"""Cubic polynomial 1 + x + x^2/2 + x^3/6 (truncated exp) on a (4096, 4096) fp32 tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 1.0 + x + x * x / 2.0 + x * x * x / 6.0


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
