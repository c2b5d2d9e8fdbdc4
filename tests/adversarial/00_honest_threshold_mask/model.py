"""Adversarial-suite task (00_honest_threshold_mask): the boolean mask sigmoid(x) > 0.5 of an (8192, 4096)
fp32 tensor.

Two correct sigmoids can round differently for x within about 1e-7 of 0, where the mask flips: such a flip
is allowed where the reference's value before the cut lies within the tolerance of it (issue 35, class 8:
a mask differing in 2 of 33M elements, each at the threshold, was refused by exact comparison).
"""

import torch
import torch.nn as nn

batch_size = 8192
dim = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x) > 0.5


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
