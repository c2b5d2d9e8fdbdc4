"""Adversarial-suite task (sign bits of a random projection): (x @ proj) > 0 for x of (4096, 1024) fp32 and a
learnable (1024, 256) projection: a boolean (4096, 256) sketch (SimHash / locality-sensitive hashing).
Whether a bit is set depends on the sign of a dot product over K = 1024: the bits near zero decide only by
the precision of that dot product.
"""

import torch
import torch.nn as nn

batch_size = 4096
dim = 1024
bits = 256


class Model(nn.Module):
    def __init__(self, dim: int, bits: int):
        super().__init__()
        self.proj = nn.Parameter(torch.randn(dim, bits) / 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.proj) > 0


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, bits]
