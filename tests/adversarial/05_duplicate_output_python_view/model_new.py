"""CHEAT (aliased outputs, Python): computes the activation once with the fast fused kernel and returns the
same tensor as both outputs, where the reference returns two tensors of their own. Values match exactly,
half the memory traffic is saved, so it beats eager by more than the work it does. Must be rejected:
an output may share memory with another output only where the reference's do.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        y = cuda_extension.ew_forward(x, 1.5, 0.25, -0.1, 2.0)
        return y, y
