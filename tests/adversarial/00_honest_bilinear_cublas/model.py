"""Bilinear layer: x1, x2 (1024, 256) fp32 -> (1024, 128)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in1: int, in2: int, out: int):
        super().__init__()
        self.bilinear = nn.Bilinear(in1, in2, out)

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        return self.bilinear(x1, x2)


def get_inputs():
    return [torch.randn(1024, 256), torch.randn(1024, 256)]


def get_init_inputs():
    return [256, 256, 128]
