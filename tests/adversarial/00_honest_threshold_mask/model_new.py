"""Honest: one kernel computes sigmoid with the fast exponential (__expf) and writes the comparison with
0.5 as a bool, four elements per thread (a float4 read, a 4-byte write). Its sigmoid may round
differently from PyTorch's near x = 0, so a few elements at the threshold may differ from the reference."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.sigmoid_mask_forward(x)
