"""The gated residual x + gamma * gelu(x) + alpha * tanh(x) + beta in one fused kernel (one read, one write),
every branch computed whatever the parameters' values (honest edge case for the parameter audit)."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gamma = nn.Parameter(1e-5 * torch.ones(dim))
        self.alpha = nn.Parameter(torch.zeros(1))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gated_forward(x, self.gamma, self.alpha, self.beta, 7)
