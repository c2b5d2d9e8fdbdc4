"""Adversarial-suite task: x + y.t() for x (2048, 4096) and y (4096, 2048), fp32 (a transposed residual add:
one operand read across its rows)."""

import torch
import torch.nn as nn

rows = 2048
cols = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y.t()


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(cols, rows)]


def get_init_inputs():
    return []
