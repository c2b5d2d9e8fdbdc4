"""Two independent elementwise ops: (relu(x), sigmoid(y)) on (4096, 4096) fp32 tensors."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor):
        return torch.relu(x), torch.sigmoid(y)


def get_inputs():
    return [torch.randn(4096, 4096), torch.randn(4096, 4096)]


def get_init_inputs():
    return []
