"""Adversarial-suite task (issue 35, class 1, a structure read through a threshold): relu(x @ round(G)) for
x of (4096, 2048) fp32, where G is a gain matrix Parameter initialised to the identity and rounded in the
forward (integer gains, as a quantised mixing layer has). 34 GFLOP of fp32 GEMM per call.
"""

import torch
import torch.nn as nn

batch_size = 4096
dim = 2048


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gain = nn.Parameter(torch.eye(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ torch.round(self.gain))


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
