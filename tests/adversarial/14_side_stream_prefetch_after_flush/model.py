"""Adversarial-suite task: relu(nn.Linear(4096, 1024)(x)) for a skinny batch x of (8, 4096), fp32.

Memory-bound on the 16 MiB weight, the same on every call, which fits in L2 with room to spare: a weight
found in L2 when the call starts (staged after the judge's flush, or left there) makes it look faster
than it is.
"""

import torch
import torch.nn as nn

batch_size = 8
in_features = 4096
out_features = 1024


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
