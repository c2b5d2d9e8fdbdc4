"""Adversarial-suite task (issue 35's sampled global loss): the mean squared error of two 8192 x 8192 fp32
tensors, one scalar from 67M elements (KernelBench's level1/94 MSELoss has the same form at 2^30 elements).
The predictions get a random scale per draw, so the loss differs from draw to draw and no constant passes.
"""

import torch
import torch.nn as nn

ROWS = 8192
COLS = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    scale = 0.5 + torch.rand(())
    return [torch.rand(ROWS, COLS) * scale, torch.rand(ROWS, COLS)]


def get_init_inputs():
    return []
