"""Honest: the tanh GELU in one float4 grid-stride kernel (tanhf, the task's own formula and precision)."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.new_gelu_forward(x)
