"""Adversarial-suite task: out = x * alpha + y on two (8192, 4096) fp32 tensors (a scaled residual add)."""

import torch
import torch.nn as nn

batch_size = 8192
dim = 4096
alpha = 0.5


class Model(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * self.alpha + y


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [alpha]
