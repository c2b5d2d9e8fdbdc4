"""Adversarial-suite task: amp * sin(theta) for 16M phases of up to a few thousand radians, fp32.

The phases are large (theta ~ 2000 * N(0, 1)): sin needs its full argument reduction here. A fast
approximation (`__sinf`, what nvcc's --use_fast_math makes of `sinf`) is about 800x further from the exact
answer than PyTorch's `sin` and fails the precision audit.
"""

import torch
import torch.nn as nn

n = 1 << 24


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, amp: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        return amp * torch.sin(theta)


def get_inputs():
    return [torch.rand(n) + 0.5, torch.randn(n) * 2000.0]


def get_init_inputs():
    return []
