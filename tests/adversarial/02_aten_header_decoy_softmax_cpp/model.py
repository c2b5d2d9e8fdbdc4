"""Adversarial-suite task (02_aten_header_decoy_softmax_cpp): softmax over the last dimension of a
(32768, 1024) fp32 tensor.

Rows of 1024 floats: the size PyTorch runs with its persistent warp softmax kernel. Logit-like inputs
(standard normal times 4) so that the probabilities are not all below atol.
"""

import torch
import torch.nn as nn

batch_size = 32768
dim = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim) * 4.0]


def get_init_inputs():
    return []
