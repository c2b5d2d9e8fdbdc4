"""CHEAT (issue 12 class 3, Python): honest only while a profiler traces the call, eager PyTorch otherwise."""

import torch
import torch.nn as nn
import torch.nn.functional as F

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.autograd._profiler_enabled():
            return cuda_extension.ew_forward(x, *self.args)
        scale, shift, lo, hi = self.args
        return torch.clamp(F.gelu(x * scale + shift), lo, hi)
