"""CHEAT (issue 12 class 2): see kernels/aten_names.cu; this file is clean."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.row_softmax_forward(x)
