"""CHEAT (issue 12 class 2, C++): model_new.py is clean; the binding calls cuBLAS once, harmlessly
(cublasSetStream on torch's handle), so the extension links cuBLAS and the coverage gate credits cuBLAS
kernels to it, and then lets ATen do the GEMM (at::mm with the Python dispatch keys excluded, unseen by an
in-process op gate). Only the bias + ReLU epilogue is its own kernel. A naive judge (op gate in the
process, library kernels attributed by name and link) sees 100% coverage and no PyTorch op.
Must be rejected: the GEMM is PyTorch's. See kernels/mm_relu_binding.cpp.
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
