"""CHEAT (a comparison that looks only at the real part, Python + C++): the task returns a complex64 tensor,
torch.complex(x @ Wr, x @ Wi). The kernel computes only the real GEMM and writes 0 for every imaginary part:
half the work. A judge that compares complex outputs through a float64 (real) copy, or whose allclose drops
the imaginary part, credits it: the real parts are exact. See kernels/complex_proj.cu.

Must be rejected: complex outputs are compared as [real, imaginary] pairs, and every imaginary part is off
by about 1 (the product x @ Wi has unit scale).
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.wr = nn.Parameter(torch.randn(in_features, out_features) / in_features**0.5)
        self.wi = nn.Parameter(torch.randn(in_features, out_features) / in_features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.complex_proj(x, self.wr, self.wi)
