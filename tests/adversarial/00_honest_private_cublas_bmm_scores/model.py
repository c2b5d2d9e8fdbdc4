"""Adversarial-suite task: scaled attention scores, torch.bmm(q, k.transpose(1, 2)) * d**-0.5, for q and k of
(64, 512, 128) fp32 (64 heads x 512 positions, head dimension 128)."""

import torch
import torch.nn as nn

heads = 64
length = 512
head_dim = 128


class Model(nn.Module):
    def __init__(self, head_dim: int):
        super().__init__()
        self.scale = head_dim**-0.5

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return torch.bmm(q, k.transpose(1, 2)) * self.scale


def get_inputs():
    return [torch.randn(heads, length, head_dim), torch.randn(heads, length, head_dim)]


def get_init_inputs():
    return [head_dim]
