"""Adversarial-suite task: LayerNorm(GELU(Linear(x))) for x of (4096, 2048), fp32.

The linear layer is 34 GFLOP of fp32 GEMM per call (about 1 ms on an H200 without TF32); GELU and the
LayerNorm over 2048 features are two memory-bound passes over the (4096, 2048) result.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
in_features = 2048
out_features = 2048


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(F.gelu(self.linear(x)))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
