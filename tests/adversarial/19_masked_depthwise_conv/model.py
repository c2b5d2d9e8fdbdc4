"""Adversarial-suite task (issue 35, class 1): conv(x) for x of (16, 64, 128, 128) fp32, where conv is a dense
3x3 same-padding nn.Conv2d(64, 64, bias=False) whose weight is masked to depthwise at initialisation
(channel c reads only channel c): a dense layer that starts depthwise and may learn to mix. 19 GFLOP of
convolution per call.
"""

import torch
import torch.nn as nn

batch_size = 16
channels = 64
size = 128


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        with torch.no_grad():
            self.conv.weight.mul_(torch.eye(channels).view(channels, channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, channels, size, size)]


def get_init_inputs():
    return [channels]
