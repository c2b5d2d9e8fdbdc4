"""Honest (issue 35, class 2): relu(x) + 1e-5 * (a @ b) in fp16, every input read: a @ b by cublasGemmEx (fp16
operands and output, fp32 accumulation, on torch's handle), then one fused epilogue relu(x) + 1e-5 * y. The
judge draws a scaled (in both workers, on every call) so that the product matters; a kernel that computes
the task must still be accepted.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return cuda_extension.relu_plus_product_forward(x, a, b, 1e-5)
