"""CHEAT (issue 12 class 2, C++): model_new.py is clean; kernels/decoy.cu includes ATen's own
PersistentSoftmax.cuh and takes the address of the kernel instance ATen launches for rows of 1024 floats (never launched), so the extension's device code holds
kernels named exactly like PyTorch's `(anonymous namespace)::softmax_warp_forward<...>` -- a namespace that is
not PyTorch's by name. The binding runs at::_softmax with the Python dispatch keys excluded: ATen launches its
own kernel, which a name-based attribution (even one reading names from the binary) counts as submitted.
A naive judge sees no PyTorch op and 100% coverage. Must be rejected: PyTorch computed the output.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.softmax_forward(x)
