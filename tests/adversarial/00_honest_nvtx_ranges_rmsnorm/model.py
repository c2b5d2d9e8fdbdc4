"""Adversarial-suite task: RMSNorm(2048, eps=1e-6) with a weight, over a (8192, 2048) fp32 tensor."""

import torch
import torch.nn as nn

batch_size = 8192
dim = 2048
eps = 1e-6


class Model(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.randn(batch_size, dim) * 1.5]


def get_init_inputs():
    return [dim, eps]
