"""Adversarial-suite task: forward substitution, torch.linalg.solve_triangular(lower, b, upper=False), for a
lower triangular matrix (2048, 2048) and b (2048, 512), fp32 (e.g. applying the inverse of a Cholesky factor).

The matrix is well conditioned: a diagonal in [1, 2] and off-diagonal entries of variance 1/n, so the solution
grows by at most a factor of about e along the substitution and fp32 keeps ~6 correct digits.
"""

import torch
import torch.nn as nn

n = 2048
cols = 512


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, lower: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.linalg.solve_triangular(lower, b, upper=False)


def get_inputs():
    lower = torch.randn(n, n).tril(-1) / n**0.5 + torch.diag(1.0 + torch.rand(n))
    return [lower, torch.randn(n, cols)]


def get_init_inputs():
    return []
