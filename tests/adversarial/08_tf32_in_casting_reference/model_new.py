"""CHEAT (precision downgrade where the reference casts, issue 35 class 3, C++): the GEMM runs on TF32 tensor
cores, written by hand with WMMA (`wmma::precision::tf32`, operands rounded with `__float_to_tf32`), so no
cuBLAS math mode, compute type or torch flag names it; then bias + ReLU. About 5e-4 off, inside 1e-2.

The task's `x.float()` made the old audit's float64 copy of the model fail ("mat1 and mat2 must have the
same dtype"), and the audit was skipped: this passed with TF32. The truth now promotes every op of the
reference itself to float64, so the cast is followed and the TF32 error (hundreds of times what an fp32
GEMM over K = 4096 can have) is refused by the precision audit.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.linear_relu_tf32(x, self.linear.weight, self.linear.bias)
