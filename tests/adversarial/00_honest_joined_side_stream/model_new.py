"""Honest: the fused elementwise chain on a private CUDA stream that is joined back to the current stream
(event wait in both directions), so all work stays ordered before anything the caller records next."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.joined_chain_forward(x, *self.args)
