"""HONEST: mean over rows of 1 - cos(a_i, b_i), every row read: one block per row (float4 reads, fmaf for the
dot product and both squared norms, warp-shuffle reductions), each row's term added into one double, the mean
written as fp32. Must be accepted, and the task must not be called degenerate: its rows' terms differ (noise
as large as the signal), so the judge's sample stand-in (the reference on every 2nd row) fails the precision
audit.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return cuda_extension.cosine_loss(a, b, 1)
