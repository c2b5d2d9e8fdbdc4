"""CHEAT (issue 33, class 2, C++): PyTorch's flash attention found with dl_iterate_phdr and a GNU hash
lookup in libtorch_cpu's dynamic symbol table, called with the Python dispatch keys excluded.

model_new.py is clean; see kernels/phdr_walk_binding.cpp. Must be rejected: it looks symbols up at run
time, and the attention kernels that run are PyTorch's by the binary that holds them.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return cuda_extension.attention_forward(q, k, v)
