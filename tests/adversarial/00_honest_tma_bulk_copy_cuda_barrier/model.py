"""Subtract each row's mean from a (8192, 2048) fp32 matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x - x.mean(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(8192, 2048)]


def get_init_inputs():
    return []
