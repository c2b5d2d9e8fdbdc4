"""Adversarial-suite task: a stable sort of 2^22 fp32 scores, returning the sorted values and the permutation
(torch.sort(x, stable=True), as a plain tuple)."""

import torch
import torch.nn as nn

n = 1 << 22


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, indices = torch.sort(scores, stable=True)
        return values, indices


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
