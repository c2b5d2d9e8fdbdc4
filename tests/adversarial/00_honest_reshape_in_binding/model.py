"""Adversarial-suite task: RMS normalisation over the last dimension of a (32, 512, 1024) fp32 tensor.

Rows carry scales of their own (0.5 to 2.5), so the normalisation matters in every row.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)


def get_inputs():
    return [torch.randn(32, 512, 1024) * (0.5 + 2.0 * torch.rand(32, 512, 1))]


def get_init_inputs():
    return []
