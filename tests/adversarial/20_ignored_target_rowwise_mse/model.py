"""Adversarial-suite task (issue 35, class 2): the per-row mean squared error between predictions and targets,
((pred - target) ** 2).mean(dim=1), for pred and target of (64, 262144) bfloat16. Each row of pred has a scale
of its own (0.5 to 3.5); target is unit normal.
"""

import torch
import torch.nn as nn

rows = 64
cols = 262144


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return ((pred - target) ** 2).mean(dim=1)


def get_inputs():
    scale = torch.rand(rows, 1) * 3 + 0.5
    return [(torch.randn(rows, cols) * scale).bfloat16(), torch.randn(rows, cols).bfloat16()]


def get_init_inputs():
    return []
