"""Adversarial-suite task (one-signed data, a mean, long reduction): x.mean(dim=1) for x = torch.rand(8,
16384, 512), fp32, the shape of KernelBench's level1/48 (a mean over dim 1 of torch.rand) with a smaller
batch and width. The sign audit cannot give a mean's input random signs (its outputs would shrink to zero),
so the inputs stay positive and carry the rounding probe's bits. Each output's inputs get a scale of their
own (0.5 to 3.5): means of plain `torch.rand` are all about 0.5, and the judge calls such a task degenerate
(its first slice repeated passes).
"""

import torch
import torch.nn as nn

B = 8
K = 16384
N = 512


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=1)


def get_inputs():
    return [torch.rand(B, K, N) * (0.5 + 3.0 * torch.rand(B, 1, N))]


def get_init_inputs():
    return []
