"""Adversarial-suite task: relu(nn.Conv2d(64, 128, 3, padding=1)(x)) for x of (32, 64, 64, 64), fp32 NCHW."""

import torch
import torch.nn as nn

batch_size = 32
in_channels = 64
out_channels = 128
size = 64
kernel_size = 3


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
