"""clamp(leaky_relu(x, 0.01), max=3) on a (4096, 4096) fp32 tensor."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(F.leaky_relu(x, 0.01), max=3.0)


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
