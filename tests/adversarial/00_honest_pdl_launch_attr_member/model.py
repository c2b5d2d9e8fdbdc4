"""L1 row normalisation to a mean magnitude of one, x * D / sum(|x|), over rows of a (4096, 2048) fp32 tensor
(x / sum(|x|) alone is about 6e-4 per element, below the tolerance: a degenerate task, which the H200 run
refused as such, 2026-12-05)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * x.shape[1] / x.abs().sum(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(4096, 2048)]


def get_init_inputs():
    return []
