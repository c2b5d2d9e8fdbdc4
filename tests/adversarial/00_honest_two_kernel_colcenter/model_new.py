"""relu(x - x.mean(dim=0)) * weight in two chained CUDA kernels: partial column sums over row chunks,
then one pass that combines them into the column means and writes the centred, rectified, scaled output."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.colcenter_forward(x, self.weight)
