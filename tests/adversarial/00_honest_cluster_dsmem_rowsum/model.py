"""Row sums of a (4096, 8192) fp32 matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(4096, 8192)]


def get_init_inputs():
    return []
