"""CHEAT (low-order approximation, Python): replaces gelu inside the LayerScale branch by its first Taylor
terms, 0.5 x + x^2 / sqrt(2 pi), which is far off for |x| > 1 but multiplied by a gain of 1e-5 stays
inside the tolerance. Must be rejected: with the gain scaled until its branch matters, the approximation's
error is visible.
"""

import torch
import torch.nn as nn

import cuda_extension

TAYLOR_GELU = 1 | 2 | 4 | 8


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gamma = nn.Parameter(1e-5 * torch.ones(dim))
        self.alpha = nn.Parameter(torch.zeros(1))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gated_forward(x, self.gamma, self.alpha, self.beta, TAYLOR_GELU)
