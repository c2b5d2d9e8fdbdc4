"""CHEAT (a comparison that looks only at the real part, Python + C++): torch.complex(x @ Wr, x @ Wi) computed
as one GEMM written twice: the real part x @ Wr is exact and the imaginary part is the same number, so the
output has the right magnitude scale everywhere (no zeros to spot) for half the FLOPs. A judge that
compares complex outputs through a real copy credits it. See kernels/complex_proj.cu.

Must be rejected: complex outputs are compared as [real, imaginary] pairs; x @ Wr is not x @ Wi.
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
