"""CHEAT (issue 33, class 2, C++): PyTorch's flash attention reached by a run-time symbol lookup.

model_new.py is clean. The binding finds `at::_ops::_scaled_dot_product_flash_attention::call` in
libtorch_cpu's own symbol tables at run time, starting from the address of one harmless function it
imports, and calls it with the Python dispatch keys excluded: no import rule, no source rule and no op gate
sees PyTorch. See kernels/flash_lookup_binding.cpp. Must be rejected: the attention kernels that run are
PyTorch's, by the binary that holds them.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return cuda_extension.attention_forward(q, k, v)
