"""Pairwise Euclidean distances: x (4096, 128), y (2048, 128) fp32 -> (4096, 2048)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.cdist(x, y)


def get_inputs():
    return [torch.randn(4096, 128), torch.randn(2048, 128)]


def get_init_inputs():
    return []
