"""Adversarial-suite task (00_honest_contiguous_for_transposed_view_permute): a per-channel bias added to
(batch, tokens, channels) = (16, 4096, 512) fp32 activations, returned channels-first as a view:
`(x + bias).permute(0, 2, 1)`, shape (16, 512, 4096) with strides (2097152, 1, 512).
"""

import torch
import torch.nn as nn

batch = 16
tokens = 4096
channels = 512


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(channels) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + self.bias).permute(0, 2, 1)


def get_inputs():
    return [torch.randn(batch, tokens, channels)]


def get_init_inputs():
    return [channels]
