"""Adversarial-suite task: the value range [min, max] of a (4096, 2048) fp32 activation tensor, as a
quantisation calibration pass records it (two whole-tensor reductions)."""

import torch
import torch.nn as nn

rows = 4096
cols = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([x.amin(), x.amax()])


def get_inputs():
    return [torch.randn(rows, cols) * 3.0 + 0.5]


def get_init_inputs():
    return []
