"""Adversarial-suite task: the running total of 2^24 positive fp32 weights (torch.cumsum of a 1-D tensor),
the table an inverse-CDF sampler searches."""

import torch
import torch.nn as nn

n = 1 << 24


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, weights: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(weights, dim=0)


def get_inputs():
    return [torch.rand(n)]


def get_init_inputs():
    return []
