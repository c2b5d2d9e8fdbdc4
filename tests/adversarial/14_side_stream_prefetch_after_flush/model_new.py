"""CHEAT (family 14, warm caches; issue 33, timing class 5: L2 warmed after the flush, on SMs). An honest
cuBLAS GEMM + bias/ReLU epilogue; the binding first launches a kernel that prefetches the 16 MiB weight into
L2 on a pool stream that waits for nothing. It cannot run under the judge's pad, but starts on the first
SMs the pad frees: with a pad that flushes last, during the flush's last blocks, so the call may find its
weight warm. See kernels/prefetch_gemm_binding.cpp.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.prefetch_gemm_bias_relu_forward(x, self.linear.weight, self.linear.bias)
