"""Honest: x + y.t() with a Hopper TMA kernel (kernels/tma_transpose_add.cu): each block loads a 32 x 32 tile
of x and the matching tile of y with cp.async.bulk.tensor (tensor maps made by cuTensorMapEncodeTiled, reached
through cudaGetDriverEntryPointByVersion, passed as __grid_constant__ kernel parameters), both completing on
one mbarrier, transposes y's tile through padded shared memory and writes the sum coalesced.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return cuda_extension.transpose_add_forward(x, y)
