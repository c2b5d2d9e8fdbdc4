"""Adversarial-suite task (00_honest_argmax_affine_rows): the index of the largest element of each row of
x * weight + bias, for x of (16384, 2048) fp32 and per-column weight and bias: an int64 output of 16384.

The scores are computed, so two correct kernels may round them differently (x * w + b in one fused
multiply-add or in two steps), and a row whose best two scores are that close may pick the other: a flip
allowed where the runner-up lies within the tolerance of the best (issue 35, class 8).
"""

import torch
import torch.nn as nn

rows = 16384
cols = 2048


class Model(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cols))
        self.bias = nn.Parameter(torch.randn(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x * self.weight + self.bias, dim=-1)


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [cols]
