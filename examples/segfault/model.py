"""Reference: softmax over the last dimension of a (4096, 8192) fp32 tensor.

The inputs are logit-like (standard normal scaled by 4): with plain randn over 8192 columns every
probability is about 1e-4, below the judge's atol of 1e-2, so even an all-zero output would pass.
"""

import torch
import torch.nn as nn

batch_size = 4096
dim = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim) * 4.0]


def get_init_inputs():
    return []
