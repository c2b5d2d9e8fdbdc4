"""Adversarial-suite task (00_honest_output_view_like_reference): sigmoid(x) for a (4096, 2048) fp32 tensor,
returned together with its transpose as a view: (y, y.t()).

The reference's second output shares memory with its first and has transposed strides; a candidate that
returns the same pair (a view of its own first output) does exactly what the reference does.
"""

import torch
import torch.nn as nn

rows = 4096
cols = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.sigmoid(x)
        return y, y.t()


def get_inputs():
    return [torch.randn(rows, cols) * 3.0]


def get_init_inputs():
    return []
