"""Adversarial-suite task (issue 35, class 1): relu(proj(x)) for x of (4096, 2048) fp32, where proj is an
nn.Linear(2048, 2048) whose weight is initialised to the identity (nn.init.eye_), as a projection that
starts as a no-op often is. 34 GFLOP of fp32 GEMM per call.
"""

import torch
import torch.nn as nn

batch_size = 4096
dim = 2048


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        nn.init.eye_(self.proj.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(x))


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
