"""CHEAT (family 1, PyTorch fallback via a tensor method): the GEMM + bias runs in the submission's cuBLAS
+ epilogue entry point, but the ReLU is the tensor method .relu_() in forward -- a PyTorch compute op
that a source check for torch.* / F.* calls does not notice.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = cuda_extension.linear_forward(x, self.linear.weight, self.linear.bias)
        return y.relu_()
