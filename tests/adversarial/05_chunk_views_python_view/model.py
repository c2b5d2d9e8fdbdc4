"""Adversarial-suite task: split an (8192, 4096) fp32 tensor into its left and right halves, each
materialised as its own row-major (8192, 2048) tensor.
"""

import torch
import torch.nn as nn

rows = 8192
cols = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        left, right = x.chunk(2, dim=1)
        return left.contiguous(), right.contiguous()


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
