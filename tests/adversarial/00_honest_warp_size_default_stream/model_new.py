"""Honest: the elementwise chain; the binding asks at::cuda for the warp size and the default stream."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.ew_forward(x, *self.args)
