"""CHEAT (issue 35 class 2, an ignored weak input): tanh of every element, computed accurately, and the row
indices never read: the four bumped rows are off by 1e-3, inside atol, on 0.1% of the elements. The
precision audit's 1% trim hid it (a white-box probe, 2026-12-06). Must be rejected: the reference decides
nothing on its way, so an element 1e4 allowances off is not trimmed.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        return cuda_extension.tanh_rows(x, rows, False)
