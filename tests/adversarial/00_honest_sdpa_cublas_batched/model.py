"""Scaled dot-product attention (no mask): q, k, v (4, 8, 512, 64) fp32."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    return [torch.randn(4, 8, 512, 64), torch.randn(4, 8, 512, 64), torch.randn(4, 8, 512, 64)]


def get_init_inputs():
    return []
