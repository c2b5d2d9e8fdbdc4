"""Adversarial-suite task (issue 35 class 2, a weak input): tanh of a 4096 x 1024 fp32 batch, plus 1e-3 on
every element of four rows named by an integer input (index_add: a row named twice gets it twice). The
bump is far inside the tolerance, so the index input is weak: it moves 0.1% of the elements, by 1e-3.
"""

import torch
import torch.nn as nn

ROWS = 4096
COLS = 1024
BUMPED = 4


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        bump = torch.full((rows.numel(), x.shape[1]), 1e-3, device=x.device, dtype=x.dtype)
        return torch.tanh(x).index_add(0, rows, bump)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 2.0, torch.randint(0, ROWS, (BUMPED,))]


def get_init_inputs():
    return []
