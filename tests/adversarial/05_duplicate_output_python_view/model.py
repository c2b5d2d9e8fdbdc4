"""Adversarial-suite task: clamp(gelu(x * 1.5 + 0.25), -0.1, 2.0) on an (8192, 4096) fp32 tensor, returned
twice: once as the activation and once as a separate copy for a consumer that writes into it.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8192
dim = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        y = torch.clamp(F.gelu(x * 1.5 + 0.25), -0.1, 2.0)
        return y, y.clone()


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
