"""HONEST: tanh of every element (float4 grid-stride), then a second small kernel that adds 1e-3 to each
element of every named row with atomicAdd (a row named twice gets it twice, as index_add does). Must be
accepted: its bumped rows are exact to fp32 rounding.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        return cuda_extension.tanh_rows(x, rows, True)
