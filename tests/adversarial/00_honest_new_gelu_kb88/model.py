"""Adversarial-suite task (00_honest_new_gelu_kb88): the tanh approximation of GELU used by GPT-2 and minGPT,
0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), on an (8192, 8192) fp32 tensor of uniform [0, 1) values:
the function, size and input distribution of KernelBench level1/88 (MinGPTNewGelu), written for this suite.

On [0, 1) the best quadratic of x comes within 0.47 of the tolerance: close, not a clear margin, so the
task is judged (issue 35, class 6: it was refused as degenerate).
"""

import math

import torch
import torch.nn as nn

batch_size = 8192
dim = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = math.sqrt(2.0 / math.pi)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cubic = x * x * x
        return 0.5 * x * (1.0 + torch.tanh(self.k * (x + 0.044715 * cubic)))


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
