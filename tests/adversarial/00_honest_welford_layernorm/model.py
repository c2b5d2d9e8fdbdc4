"""Adversarial-suite task (00_honest_welford_layernorm): LayerNorm(8192) with randomised weight and bias on a
(2048, 8192) fp32 tensor whose rows have a mean of 3 and a spread of 2 (the statistics are long reductions,
and a one-pass E[x^2] - E[x]^2 would lose bits to the mean)."""

import torch
import torch.nn as nn

batch_size = 2048
dim = 8192
eps = 1e-5


class Model(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.ln = nn.LayerNorm(dim, eps=eps)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    return [torch.randn(batch_size, dim) * 2.0 + 3.0]


def get_init_inputs():
    return [dim, eps]
