"""Adversarial-suite task (half precision, positive data, long K): a @ b for a = torch.rand(128, 32768) and
b = torch.rand(32768, 128) in fp16, outputs in fp16. As drawn every product is positive (each output about
8192); an honest kernel multiplies the fp16 operands exactly and accumulates in fp32. Small M and N keep it
cheap.
"""

import torch
import torch.nn as nn

M = 128
K = 32768
N = 128


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def get_inputs():
    return [torch.rand(M, K, dtype=torch.float16), torch.rand(K, N, dtype=torch.float16)]


def get_init_inputs():
    return []
