"""Adversarial-suite task: relu(nn.Linear(8192, 2048)(x)) for x of (2048, 8192), fp32.

A long reduction dimension (K = 8192): 69 GFLOP of fp32 work per call.
"""

import torch
import torch.nn as nn

batch_size = 2048
in_features = 8192
out_features = 2048


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
