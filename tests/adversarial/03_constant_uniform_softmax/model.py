"""Adversarial-suite task (degenerate on purpose): softmax over 32768 columns of plain standard-normal
logits. Every probability is about 1/32768 = 3e-5 (the largest about 2e-3), far below atol = 1e-2: the
constant 1/32768 (or zero) passes the comparison."""

import torch
import torch.nn as nn

batch_size = 1024
dim = 32768


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
