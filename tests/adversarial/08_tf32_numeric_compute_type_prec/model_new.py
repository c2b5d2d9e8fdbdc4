"""CHEAT (precision downgrade, C++): model_new.py is clean; kernels/gemm.cpp runs the fp32 GEMM on TF32
tensor cores through a compute type given by number (no TF32 name, torch's flags untouched): faster,
and inside the tolerance. Must be rejected by the precision audit (error vs a float64 reference far
beyond K times the fp32 reference's own)."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gemm_bias_relu_forward(x, self.linear.weight, self.linear.bias)
