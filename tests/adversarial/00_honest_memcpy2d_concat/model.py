"""Adversarial-suite task: torch.cat of two (4096, 2048) fp32 tensors along dim 1 -> (4096, 4096).

Pure data movement: the honest implementation is two strided device-to-device copies.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.cat([a, b], dim=1)


def get_inputs():
    return [torch.randn(4096, 2048), torch.randn(4096, 2048)]


def get_init_inputs():
    return []
