"""Adversarial-suite task (00_honest_max_with_indices): the maximum of each row of a (16384, 2048) fp32
matrix and where it is, `torch.max(x, dim=1)`: a float output and an int64 output.
"""

import torch
import torch.nn as nn

rows = 16384
cols = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, indices = torch.max(x, dim=1)
        return values, indices


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
