"""Adversarial-suite task: the transpose of a (4096, 2048) fp32 matrix, materialised.

A memory-bound copy with one strided side; the output is a new row-major (2048, 4096) tensor.
"""

import torch
import torch.nn as nn

rows = 4096
cols = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.t().contiguous()


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
