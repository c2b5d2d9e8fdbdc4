"""Adversarial-suite task (degenerate on purpose): a GELU scaled down to 1e-4, so every output element is
far below atol = 1e-2 and an all-zero answer passes the comparison."""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8192
dim = 4096
out_scale = 1e-4


class Model(nn.Module):
    def __init__(self, out_scale: float):
        super().__init__()
        self.out_scale = out_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x) * self.out_scale


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [out_scale]
