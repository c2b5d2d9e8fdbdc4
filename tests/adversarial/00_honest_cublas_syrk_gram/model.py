"""Adversarial-suite task: the Gram matrix a @ a.T of a (2048, 1024) fp32 matrix (2048 x 2048, symmetric)."""

import torch
import torch.nn as nn

rows = 2048
cols = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        return a @ a.T


def get_inputs():
    return [torch.randn(rows, cols) / cols**0.5]


def get_init_inputs():
    return []
