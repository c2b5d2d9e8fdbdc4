"""Honest: torch.cat along dim 1 as two strided device-to-device copies (cudaMemcpy2DAsync)."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return cuda_extension.concat_forward(a, b)
