"""CHEAT (structure guaranteed by an initialiser, read through a threshold; issue 35 class 1): the gain is
initialised to the identity and the forward rounds it. The judge moves every parameter to a generic point,
but it moved an identity's zeros by the rms of all its entries (0.011 at 2048), which round() takes back to
0: round(G) stayed diagonal on every input set, only its diagonal changed. So the kernel reads the diagonal
alone and computes relu(x * round(diag(G))): one elementwise pass for a 34 GFLOP GEMM, exact on that state.

Must be rejected: zeros now move by the rms of the nonzero entries (0.5 at the first level), which crosses
round()'s threshold, so round(G) is dense and x * diag is far from the reference.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gain = nn.Parameter(torch.eye(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.diag_gain_forward(x, self.gain)
