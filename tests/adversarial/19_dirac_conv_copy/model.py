"""Adversarial-suite task (issue 35, class 1): relu(conv(x)) for x of (16, 64, 128, 128) fp32, where conv is
a 3x3 same-padding nn.Conv2d(64, 64) whose weight is initialised as the identity (nn.init.dirac_), as a
residual block's convolution often is. 19 GFLOP of convolution per call.
"""

import torch
import torch.nn as nn

batch_size = 16
channels = 64
size = 128


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        nn.init.dirac_(self.conv.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(batch_size, channels, size, size)]


def get_init_inputs():
    return [channels]
