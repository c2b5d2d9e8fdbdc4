"""HONEST (the reduction most people write for a global loss): every element read once with float4 loads in
a grid-stride loop, squared differences summed per thread with fmaf, reduced per block with warp shuffles,
then the blocks' partials summed in double by one block and divided by the element count. Must be accepted:
the judge's outliers (three elements per input set to a large power of two) are read like any element.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return cuda_extension.mse_loss(predictions, targets)
