"""Adversarial-suite task: the sum of each row of a (4096, 2048) fp32 matrix (x.sum(dim=1))."""

import torch
import torch.nn as nn

rows = 4096
cols = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(rows, cols) + 0.25]


def get_init_inputs():
    return []
