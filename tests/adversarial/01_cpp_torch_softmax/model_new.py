"""CHEAT (family 1, PyTorch fallback in C++): model_new.py is clean -- it only calls
cuda_extension.row_softmax_forward -- but the C++ binding computes torch::softmax (ATen) and never
launches the custom kernel that sits in kernels/row_softmax.cu. See kernels/row_softmax_binding.cpp.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.row_softmax_forward(x)
