"""CHEAT (structure guaranteed by an initialiser, issue 35 class 1): the dense convolution's weight is zero
off the channel diagonal at initialisation, and the judge used to hand the candidate exactly that weight.
So the kernel runs a depthwise 3x3 convolution with the diagonal taps weight[c, c] it reads from the given
weight (so the values are right, only the zeros are assumed): 1/64 of the multiply-adds, exact. See
kernels/depthwise.cu.

Must be rejected: every parameter is moved to a random point, zeros included, before verifying, so the
off-diagonal taps are not zero; the reason says the output is what the weight gives with its initial zero
entries set back to zero.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.masked_depthwise_forward(x, self.conv.weight)
