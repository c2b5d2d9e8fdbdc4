"""Adversarial-suite task (00_honest_tuple_outputs): two outputs from one input, (relu(x), sigmoid(x)), for a
(4096, 4096) fp32 tensor.

Eager reads x twice (two kernels); one kernel can read it once and write both outputs.
"""

import torch
import torch.nn as nn

batch_size = 4096
dim = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.relu(x), torch.sigmoid(x)


def get_inputs():
    return [torch.randn(batch_size, dim) * 3.0]


def get_init_inputs():
    return []
