"""Linear + ReLU as a cuBLAS SGEMM followed by one fused bias + ReLU epilogue kernel.

`self.linear` is kept only so that the parameters (linear.weight, linear.bias) have the same names and
shapes as the reference; it is never called.
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
