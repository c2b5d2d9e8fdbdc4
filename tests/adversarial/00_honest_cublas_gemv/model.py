"""Adversarial-suite task: y = W x, an (8192, 8192) fp32 weight times an 8192-vector (torch.mv).

A matrix-vector product: cuBLAS gemv is the library routine for it, as GEMM is for matrix products.
"""

import torch
import torch.nn as nn

n = 8192


class Model(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, n) / n**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mv(self.weight, x)


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return [n]
