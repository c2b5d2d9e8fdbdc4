"""Adversarial-suite task (issue 35, class 1): x @ mix for x of (4096, 2048) fp32, where mix is a learnable
(2048, 2048) mixing matrix initialised to a random permutation matrix (a channel shuffle that training may
soften). 34 GFLOP of fp32 GEMM per call.
"""

import torch
import torch.nn as nn

batch_size = 4096
dim = 2048


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.mix = nn.Parameter(torch.eye(dim)[torch.randperm(dim)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.mix


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
