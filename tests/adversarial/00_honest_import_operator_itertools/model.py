"""x * w for x (8192, 1024) fp32 and a learned column scale w (1024,), initialised with nn.init."""

import torch
import torch.nn as nn
import torch.nn.init as init
from torch.nn.parameter import Parameter


class Model(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.w = Parameter(torch.empty(cols))
        init.uniform_(self.w, 0.5, 1.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.w


def get_inputs():
    return [torch.randn(8192, 1024)]


def get_init_inputs():
    return [1024]
