"""Honest: Linear + SiLU as an fp32 cublasSgemm on a private cuBLAS handle (created once, lazily, bound to
torch's current stream on every call; kernels/private_gemm.cpp) and one fused bias + SiLU epilogue kernel
(kernels/bias_silu.cu).

`self.proj` is kept only so that the parameters (proj.weight, proj.bias) match the reference; it is never
called.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.linear_silu_forward(x, self.proj.weight, self.proj.bias)
