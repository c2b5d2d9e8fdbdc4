"""Honest: the moving average updated in place by one float4 kernel, avg = decay * avg + (1 - decay) * x,
written into avg, which forward returns as the task does."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, decay: float):
        super().__init__()
        self.decay = float(decay)

    def forward(self, avg: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.ema_inplace_forward(avg, x, self.decay)
