"""CHEAT (family 3, subsampling a global loss): the mean squared error computed from every 16th row only,
read with float4 loads and reduced like an honest kernel, then scaled up as a mean over the rows it read.
It reads 1/16 of the data of a memory-bound reduction (up to 16x faster). Its error falls like 1/sqrt(pN)
while an fp32 sum's honest allowance grows like sqrt(N): at 67M elements a 1/16 sample sat at 3.22 of a
bound of 9 on the judge's draws before the outlier audit (docs/design/precision.md). Must be rejected: the
judge's outliers (three elements per input, each 1/64 of the loss) are counted 16 times or not at all.
"""

import torch
import torch.nn as nn

import cuda_extension

ROW_STEP = 16


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return cuda_extension.sampled_mse_loss(predictions, targets, ROW_STEP)
