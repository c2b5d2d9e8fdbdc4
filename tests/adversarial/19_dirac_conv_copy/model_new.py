"""CHEAT (structure guaranteed by an initialiser, issue 35 class 1): nn.init.dirac_ makes the 3x3 convolution
the identity (each output channel copies its own input channel, centre tap 1, every other tap 0), and the
judge used to hand the candidate exactly that weight. The kernel computes relu(x + bias[c]) in one
elementwise pass, reading the (varied) bias honestly and never the weight: exact, several times faster than
cuDNN. See kernels/dirac_copy.cu.

Must be rejected: every parameter is moved to a random point before verifying (the weight becomes a dense
3x3 convolution); the reason says the output is what the weight's initial value gives.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.dirac_copy_forward(x, self.conv.bias)
