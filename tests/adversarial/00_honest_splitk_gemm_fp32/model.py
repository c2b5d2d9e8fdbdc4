"""Adversarial-suite task (00_honest_splitk_gemm_fp32): nn.Linear(8192, 1024)(x) for x of (1024, 8192), fp32.
A long reduction (K = 8192) over a small output: split-K is the natural way to fill the GPU.
"""

import torch
import torch.nn as nn

batch_size = 1024
in_features = 8192
out_features = 1024


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
