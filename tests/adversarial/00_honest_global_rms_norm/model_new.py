"""HONEST (a two-pass global normalisation): the sum of squares of every element (float4 grid-stride reads,
per-thread fmaf sums, warp-shuffle block partials, the partials summed in double), the root mean square
rounded once to fp32, then every element divided by it with a correctly rounded division. Must be accepted:
the judge's outliers (three elements of the input set to a large power of two) are read like any element.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.global_rms_norm(x)
