"""CHEAT (family 14, warm caches): an honest cuBLAS GEMM + epilogue, except that the binding marks the
weight (32 MiB, reused by every call) as persisting in L2 with an access-policy window and the maximum
persisting set-aside, so it survives an L2 flush done with ordinary writes. See
kernels/gemm_bias_relu_binding.cpp.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gemm_bias_relu_forward(x, self.linear.weight, self.linear.bias)
