"""Adversarial-suite task (00_honest_threshold_mask_above_row_mean): for an (8192, 4096) fp32 matrix, the
boolean mask of the elements above their row's mean, `x > x.mean(dim=-1, keepdim=True)`.

The mean is a reduction whose rounding depends on its order: a kernel summing in another order gets a
mean a few units in the last place away, and the elements that close to it may land on the other side
(about three in 33M). Flips there lie within the tolerance of the cut and are allowed.
"""

import torch
import torch.nn as nn

batch_size = 8192
dim = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x > x.mean(dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
