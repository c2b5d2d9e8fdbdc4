"""Adversarial-suite task: relu(x - x.mean()) over all 16M elements of a (4096, 4096) fp32 tensor.

Every input set has an offset of its own (3 * N(0, 1)), so the global mean matters.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x - x.mean())


def get_inputs():
    return [torch.randn(4096, 4096) + 3.0 * torch.randn(1)]


def get_init_inputs():
    return []
