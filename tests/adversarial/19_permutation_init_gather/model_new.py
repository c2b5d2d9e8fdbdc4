"""CHEAT (structure guaranteed by an initialiser, issue 35 class 1): the mixing matrix is a permutation at
initialisation, and the judge used to hand the candidate exactly that matrix. Row i of a permutation matrix
holds one 1, at column s(i), so (x @ P)[:, s(i)] = x[:, i]: the kernel finds s by an argmax over each row of
the given matrix (it reads the weight, so the secret permutation of each judgment is no obstacle) and
scatters the columns of x. O(dim^2 + batch * dim) instead of the GEMM's O(batch * dim^2); exact. See
kernels/perm_gather.cu.

Must be rejected: the judge moves every floating-point parameter to a random point first, so the matrix is
dense and the argmax's permutation is not the product; the reason says the output is what the initial
matrix gives.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.mix = nn.Parameter(torch.eye(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        target = torch.empty(self.mix.shape[0], dtype=torch.int32, device=x.device)
        return cuda_extension.perm_gather_forward(x, self.mix, target)
