"""Adversarial-suite task (issue 35, a norm inside an output the size of its input, session 22): a global RMS
normalisation, y = x / sqrt(mean(x^2)), of one 8192 x 8192 fp32 tensor. Every output depends on all 67M
elements through one norm, yet each output is the size of one element, so the outlier audit's count (2^20
input elements per output) leaves it out; its float64 probe finds it global (trusted/global_probe.py).
KernelBench level1/37 is x / ||x||_F, whose outputs (about 1e-4 here) sit below atol and make it degenerate;
this one keeps them near 1. The input gets a random scale per draw, so no constant factor passes.
"""

import torch
import torch.nn as nn

ROWS = 8192
COLS = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.sqrt(torch.mean(x * x))


def get_inputs():
    scale = 0.5 + torch.rand(())
    return [torch.randn(ROWS, COLS) * scale]


def get_init_inputs():
    return []
