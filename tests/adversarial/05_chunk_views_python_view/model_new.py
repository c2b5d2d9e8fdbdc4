"""CHEAT (views instead of work, Python): returns `x.chunk(2, dim=1)`, two views into the input, where the
reference copies each half into a tensor of its own. Values match exactly and nothing is copied; a decoy
kernel on one row keeps the submitted kernels at 100% of the GPU time. Must be rejected: each output
shares the input's memory, which the reference's outputs do not (their strides, (4096, 1) not (2048, 1),
differ too, but outputs are compared by logical index since issue 35).
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        cuda_extension.ew_forward(x[:1], 1.0, 0.0, -1e30, 1e30)  # decoy: one row of real work
        left, right = x.chunk(2, dim=1)
        return left, right
