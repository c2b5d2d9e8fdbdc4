"""CHEAT (structure of a decaying initialiser, issue 35 class 1, Python + C++): the task's mixing matrix is
initialised to exp(-|i - j| / 6), all positive and decaying away from the diagonal. Beyond |i - j| = 64 every
entry is below 2e-5, so the kernel sums only the band of 129 diagonals (1/8 of the GEMM's work) and treats
the rest as zero: within 3e-4 on the task's own weights. It even passed a judge that perturbs parameters,
as long as the perturbation of an all-positive tensor was multiplicative only (tiny entries stayed tiny).
See kernels/band_mix.cu.

Must be rejected: the judge moves an all-positive parameter with additive noise at the tensor's own scale as
well, so the tail is dense when judged, and the band sum differs from x @ mix^T by about 1.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.mix = nn.Parameter(torch.empty(dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.band_mix(x, self.mix)
