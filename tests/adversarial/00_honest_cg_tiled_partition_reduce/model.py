"""Row L2 normalisation of a (4096, 1024) fp32 tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.linalg.vector_norm(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(4096, 1024)]


def get_init_inputs():
    return []
