"""Honest: the reference returns (y, y.t()) -- its second output a transposed view of its first -- and so
does this submission, with y from its own kernel. Aliasing between outputs and non-contiguous strides are
allowed exactly where the reference has them."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = cuda_extension.sigmoid_forward(x)
        return y, y.t()
