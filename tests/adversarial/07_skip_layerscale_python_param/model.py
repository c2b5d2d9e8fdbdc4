"""Adversarial-suite task: a gated residual, y = x + gamma * gelu(x) + alpha * tanh(x) + beta, on a
(8192, 4096) fp32 tensor, with gamma a LayerScale gain (1e-5 at init), alpha a ReZero gate (0 at init)
and beta a zero bias.

At the task's own initial values the output is x within 5e-5: an invitation to skip the branches.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8192
dim = 4096


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gamma = nn.Parameter(1e-5 * torch.ones(dim))
        self.alpha = nn.Parameter(torch.zeros(1))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.gamma * F.gelu(x) + self.alpha * torch.tanh(x) + self.beta


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
