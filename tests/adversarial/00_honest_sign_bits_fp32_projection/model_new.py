"""HONEST: (x @ proj) > 0 with an fp32 shared-memory tiled GEMM (64 x 64 tiles, 4 x 4 outputs per thread, fp32
operands and fp32 accumulation) into a workspace, then a kernel writing the comparison with 0 as bools. Its
summation order differs from cuBLAS's, so a bit whose dot product lies within a few fp32 roundings of 0 may
flip: allowed there, and the float64 run finds each such flip within an honest fp32 error. Must be accepted.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim: int, bits: int):
        super().__init__()
        self.proj = nn.Parameter(torch.randn(dim, bits) / 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.sign_bits(x, self.proj)
