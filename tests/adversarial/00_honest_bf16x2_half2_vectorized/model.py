"""(x + y) * sigmoid(y) on (8192, 4096) bf16 tensors."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x + y) * torch.sigmoid(y)


def get_inputs():
    return [torch.randn(8192, 4096, dtype=torch.bfloat16), torch.randn(8192, 4096, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
