"""Adversarial-suite task (00_honest_absmax_norm): a global abs-max normalisation, x / max(|x|), of an
(8192, 4096) fp32 tensor: every element scaled by one number that only a reduction over all of x gives.

On each input set alone the output is a linear function of x; the coefficient changes from set to set,
so no fixed polynomial of x passes on all of them (issue 35, class 6: it was refused as degenerate).
"""

import torch
import torch.nn as nn

batch_size = 8192
dim = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / x.abs().max()


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
