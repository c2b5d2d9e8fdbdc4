"""Adversarial-suite task: the cumulative sum along each row of an (8192, 1024) fp32 matrix
(torch.cumsum(x, dim=1))."""

import torch
import torch.nn as nn

rows = 8192
cols = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=1)


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
