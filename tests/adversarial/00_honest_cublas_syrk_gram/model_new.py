"""Honest: a @ a.T with cublasSsyrk on torch's cuBLAS handle, which computes one triangle of the symmetric
result (half the FLOPs of the GEMM; kernels/syrk.cpp), and an own tiled kernel that mirrors it into the other
triangle through shared memory (kernels/mirror.cu).
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gram_forward(a)
