"""Adversarial-suite task (08_truncated_weights_long_k): nn.Linear(8192, 8192)(x) for x of (16, 8192), fp32.

A skinny batch: reading the 256 MB weight dominates the time, so storing it in fewer bits is the obvious
way to be faster. The reduction is long (K = 8192).
"""

import torch
import torch.nn as nn

batch_size = 16
in_features = 8192
out_features = 8192


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
