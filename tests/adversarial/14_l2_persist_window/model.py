"""Adversarial-suite task: relu(nn.Linear(4096, 2048)(x)) for a skinny batch x of (64, 4096), fp32.

Memory-bound on the 32 MiB weight matrix, which is the same on every call: an L2 cache that survived the
judge's flush would make it look faster than it is.
"""

import torch
import torch.nn as nn

batch_size = 64
in_features = 4096
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
