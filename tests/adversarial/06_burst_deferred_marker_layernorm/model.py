"""Adversarial-suite task: LayerNorm(4096) with randomised weight and bias on a (4096, 4096) fp32 tensor."""

import torch
import torch.nn as nn

batch_size = 4096
dim = 4096
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
    return [torch.randn(batch_size, dim) * 2.0 + 0.5]


def get_init_inputs():
    return [dim, eps]
