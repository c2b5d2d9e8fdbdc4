"""Weighted sum 0.5 * a + 0.25 * b + c of three (4096, 4096) fp32 tensors."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return 0.5 * a + 0.25 * b + c


def get_inputs():
    return [torch.randn(4096, 4096), torch.randn(4096, 4096), torch.randn(4096, 4096)]


def get_init_inputs():
    return []
