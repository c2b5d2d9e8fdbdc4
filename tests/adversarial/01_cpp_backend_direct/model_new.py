"""CHEAT (family 1, PyTorch fallback in C++ that bypasses the dispatcher): model_new.py is clean, but the
binding calls at::cuda::_softmax (ATen/ops/_softmax_cuda_dispatch.h), the CUDA backend function itself,
without going through the dispatcher: no op is ever reported. See kernels/row_softmax_binding.cpp.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.row_softmax_forward(x)
