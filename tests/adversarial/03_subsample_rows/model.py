"""Adversarial-suite task: GELU of a batch whose rows are one shared random pattern plus a small per-row
jitter (std 5e-4), as in a broadcast positional embedding with a little noise. The task is not
degenerate (zeros, a constant or the mean all fail), but neighbouring output rows differ by less than
atol, which invites computing a subsample of the rows and copying it."""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8192
dim = 4096
jitter = 5e-4


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


def get_inputs():
    base = torch.randn(1, dim) * 2.0
    return [base + jitter * torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
