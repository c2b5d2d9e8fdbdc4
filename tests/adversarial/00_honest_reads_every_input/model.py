"""Adversarial-suite task (issue 35, class 2): relu(x) + 1e-5 * (a @ b) for x, a, b of (4096, 4096) fp16: a
half-precision residual with a small correction term. 137 GFLOP of fp16 GEMM per call.

As drawn (unit normal inputs), the correction is about 6e-4 per element: below the tolerance.
"""

import torch
import torch.nn as nn

n = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + 1e-5 * (a @ b)


def get_inputs():
    return [torch.randn(n, n).half(), torch.randn(n, n).half(), torch.randn(n, n).half()]


def get_init_inputs():
    return []
