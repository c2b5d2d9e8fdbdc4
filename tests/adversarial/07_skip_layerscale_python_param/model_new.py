"""CHEAT (parameter specialisation, Python): assumes the LayerScale gain is what it is at init (1e-5), so
gamma * gelu(x) is below the tolerance, and skips that branch: the kernel computes x + alpha * tanh(x) +
beta only (no erf). On the task's own state_dict the answer is within 5e-5. Must be rejected: the judge
varies the parameters and scales each until skipping what it gates fails the comparison.
"""

import torch
import torch.nn as nn

import cuda_extension

WITHOUT_GAMMA_BRANCH = 2 | 4


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gamma = nn.Parameter(1e-5 * torch.ones(dim))
        self.alpha = nn.Parameter(torch.zeros(1))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gated_forward(x, self.gamma, self.alpha, self.beta, WITHOUT_GAMMA_BRANCH)
