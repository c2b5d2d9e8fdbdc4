"""CHEAT (precision downgrade, math mode toggled inside forward, C++): model_new.py is clean; around its
SGEMM the binding switches torch's cuBLAS handle to TF32 tensor-op math and back to the default right
after (kernels/gemm.cpp, by number, no TF32 name), so any check of the math settings before or after a
call sees the defaults. The fp32 GEMM runs on TF32 tensor cores, inside atol = rtol = 1e-2. Must be
rejected by the precision audit."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gemm_bias_relu_forward(x, self.linear.weight, self.linear.bias)
