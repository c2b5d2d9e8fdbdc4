"""Honest: one 256-thread block per row keeps the row in registers (float4s), sums it with warp shuffles in
its own order, and writes the bool mask of the elements above sum / cols."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.above_row_mean_forward(x)
