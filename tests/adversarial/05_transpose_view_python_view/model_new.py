"""CHEAT (views instead of work, Python): forward returns `x.t()`, a view of the input with the transposed
values, where the reference materialises the transpose. It compares equal element by element and costs
nothing; a decoy kernel on one row keeps the submitted kernels at 100% of the GPU time. A judge that
compares values only credits a free transpose. Must be rejected: the output shares memory with the
input, which the reference's does not (its strides differ too, but outputs are compared by logical index).
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cuda_extension.ew_forward(x[:1], 1.0, 0.0, -1e30, 1e30)  # decoy: one row of real work
        return x.t()
