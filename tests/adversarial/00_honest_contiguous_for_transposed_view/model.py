"""Adversarial-suite task (00_honest_contiguous_for_transposed_view): tanh of a (4096, 8192) fp32 matrix,
returned transposed as a view: `torch.tanh(x).t()`, shape (8192, 4096) with strides (1, 8192).

The reference's output is a view of its own result, not of an input: a submission may return the same
values in any layout (issue 35, class 7: a contiguous output was refused for its strides).
"""

import torch
import torch.nn as nn

rows = 4096
cols = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x).t()


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
