"""Adversarial-suite task: the SwiGLU gate of a feed-forward block, silu(gate) * up, for two (4096, 2048) fp32
tensors."""

import torch
import torch.nn as nn
import torch.nn.functional as F

rows = 4096
cols = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        return F.silu(gate) * up


def get_inputs():
    return [torch.randn(rows, cols) * 2.0, torch.randn(rows, cols)]


def get_init_inputs():
    return []
