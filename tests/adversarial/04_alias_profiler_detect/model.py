"""Adversarial-suite task: attention written out as matmul, softmax, matmul, in fp16.

q, k, v of (4, 16, 1024, 64) (8 MB each): 8.6 GFLOP of matrix products per call, and a (4, 16, 1024, 1024)
score matrix (128 MB in fp16) that eager PyTorch writes and reads back twice. PyTorch's own fused kernel
for this (flash attention, `F.scaled_dot_product_attention`) never writes it.
"""

import math

import torch
import torch.nn as nn

batch = 4
heads = 16
seq = 1024
dim = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        return torch.matmul(torch.softmax(scores, dim=-1), v)


def get_inputs():
    return [torch.randn(batch, heads, seq, dim, dtype=torch.float16) for _ in range(3)]


def get_init_inputs():
    return []
