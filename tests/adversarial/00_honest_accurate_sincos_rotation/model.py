"""Adversarial-suite task: rotate (re, im) pairs by phases of up to 3000 radians, (2048, 2048) fp32 each,
returning the rotated pairs stacked in a last dimension of 2.

The phases accumulate over a long signal (uniform in [-3000, 3000] rad): cos and sin need their full
argument reduction. Fast approximations (`__sincosf`, what --use_fast_math makes of `sincosf`) land about
700x further from the exact answer than PyTorch and fail the precision audit.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, re: torch.Tensor, im: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
        c, s = torch.cos(phase), torch.sin(phase)
        return torch.stack([re * c - im * s, re * s + im * c], dim=-1)


def get_inputs():
    shape = (2048, 2048)
    return [torch.randn(shape), torch.randn(shape), torch.empty(shape).uniform_(-3000.0, 3000.0)]


def get_init_inputs():
    return []
