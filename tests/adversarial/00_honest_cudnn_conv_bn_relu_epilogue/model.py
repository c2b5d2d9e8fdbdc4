"""Adversarial-suite task: a ResNet-style downsampling block in eval mode, relu(BatchNorm2d(Conv2d(64, 128, 3,
stride=2, padding=1, bias=False)(x))) for x of (16, 64, 96, 96), fp32 NCHW."""

import torch
import torch.nn as nn

batch_size = 16
in_channels = 64
out_channels = 128
size = 96


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]
