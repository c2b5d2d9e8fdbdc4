"""Adversarial-suite task: softmax over the last dimension of a (4096, 4096) fp32 tensor.

Logit-like inputs (standard normal times 4) so that the probabilities are not all below atol.
"""

import torch
import torch.nn as nn

batch_size = 4096
dim = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim) * 4.0]


def get_init_inputs():
    return []
