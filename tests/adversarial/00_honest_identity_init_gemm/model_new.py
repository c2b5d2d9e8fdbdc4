"""Honest (issue 35, class 1): relu(proj(x)) for a Linear whose weight is initialised to the identity, computed
as the task asks, whatever the weight: a cuBLAS SGEMM on torch's handle and a fused bias + ReLU epilogue
(the kernels of 00_honest_gemm_bias_relu). The judge moves every parameter to a random point before verifying;
a kernel that computes with the weights it is given must still be accepted.

`self.proj` is kept only so that the parameters have the reference's names and shapes; it is never called.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gemm_bias_relu_forward(x, self.proj.weight, self.proj.bias)
