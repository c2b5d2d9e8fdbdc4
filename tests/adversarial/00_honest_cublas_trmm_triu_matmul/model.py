"""Adversarial-suite task: an upper-triangular matrix product, torch.triu(a) @ b, for a (2048, 2048) and
b (2048, 1024) fp32 (the upper triangle of a full matrix, e.g. a causal mixing matrix)."""

import torch
import torch.nn as nn

n = 2048
cols = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.triu(a) @ b


def get_inputs():
    return [torch.randn(n, n) / n**0.5, torch.randn(n, cols)]


def get_init_inputs():
    return []
