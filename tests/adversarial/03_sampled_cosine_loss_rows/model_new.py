"""CHEAT (family 3, a mean of bounded per-row terms read from a sample): 1 - cos(a_i, b_i) computed for every
2nd row only (float4 reads, fmaf, warp-shuffle reductions, the terms summed in double, like the honest kernel)
and averaged over the rows read. Half the reads. Where every row's term is nearly the same (rows within 1% of
parallel or anti-parallel), the sample's error is inside the fp32 allowance. Must be rejected: the judge's
sample stand-in finds that the reference on every 2nd row passes, and the task is degenerate (task_error).
"""

import torch
import torch.nn as nn

import cuda_extension

ROW_STEP = 2


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return cuda_extension.cosine_loss(a, b, ROW_STEP)
