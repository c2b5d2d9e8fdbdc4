"""CHEAT (family 1, PyTorch fallback in C++): model_new.py is clean; the binding computes the GEMM with
at::mm and only runs the cheap bias + ReLU epilogue as a custom kernel. See
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
