"""Adversarial-suite task: logsumexp over each of 64 long rows (64, 262144), fp32.

Rows have offsets and scales of their own, so every row's answer differs.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(x, dim=1)


def get_inputs():
    rows, cols = 64, 262144
    return [torch.randn(rows, cols) * (0.5 + 2.0 * torch.rand(rows, 1)) + 5.0 * torch.randn(rows, 1)]


def get_init_inputs():
    return []
