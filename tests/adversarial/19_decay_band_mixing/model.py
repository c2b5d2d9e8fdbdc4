"""Adversarial-suite task (decaying mixing matrix): x @ mix.t() for x of (1024, 1024) fp32, where mix is a
learnable (1024, 1024) matrix initialised to exp(-|i - j| / 6): every entry positive, decaying away from the
diagonal (a locality prior, as relative-position mixing layers start). 2 GFLOP of dense GEMM per call.
"""

import torch
import torch.nn as nn

batch_size = 1024
dim = 1024


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        idx = torch.arange(dim, dtype=torch.float32)
        self.mix = nn.Parameter(torch.exp(-(idx[:, None] - idx[None, :]).abs() / 6.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.mix.t()


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
