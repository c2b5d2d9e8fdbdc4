"""Adversarial-suite task (float64 GEMM): a @ b for a of (256, 2048) and b of (2048, 256), both float64. The
task computes in float64, so the answer is asked in float64's precision.
"""

import torch
import torch.nn as nn

M = 256
K = 2048
N = 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def get_inputs():
    return [torch.randn(M, K, dtype=torch.float64), torch.randn(K, N, dtype=torch.float64)]


def get_init_inputs():
    return []
