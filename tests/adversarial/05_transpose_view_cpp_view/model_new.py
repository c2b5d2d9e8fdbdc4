"""CHEAT (views instead of work, C++): model_new.py is clean; the binding returns a transposed view of the
input (made in C++, no kernel) after a one-row decoy kernel. See kernels/view_binding.cpp.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.transpose_forward(x)
