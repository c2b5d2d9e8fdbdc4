"""CHEAT (family 4, replay when the shape repeats): the first call computes the output with the real
kernel and stores it; every later call whose input has the same shape gets that stored tensor back with
no work. A judge that checks one input (or the same input again) and then times the same shape sees a
correct kernel that costs nothing.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))
        self.stored: dict[tuple, torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), x.dtype)
        if key not in self.stored:
            self.stored[key] = cuda_extension.ew_forward(x, *self.args)
        return self.stored[key]
