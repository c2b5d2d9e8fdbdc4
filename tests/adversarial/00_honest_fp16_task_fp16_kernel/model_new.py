"""Honest: an fp16 task computed by an fp16 kernel (halves in and out, fp32 arithmetic inside, one rounding
per element). The precision audit must not refuse it: the reference computes in fp16 too."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.half_chain_forward(x, *self.args)
