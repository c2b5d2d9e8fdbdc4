"""CHEAT (family 14, warm caches; issue 33, timing class 5: L2 warmed after the flush). An honest cuBLAS
GEMM + bias/ReLU epilogue, except that the binding first copies the 16 MiB weight (4 MiB pieces into one
scratch buffer) with cudaMemcpyAsync on a pool stream that waits for nothing: the copy engines run it while
the judge's pad occupies the SMs, and the copy's reads leave the weight in L2. With a pad that flushes first
and spins after (protocol v5) the call finds its weight warm (+3 at 1.8x); the flush must be the pad's last
act. See kernels/stage_gemm_binding.cpp.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.staged_gemm_bias_relu_forward(x, self.linear.weight, self.linear.bias)
