"""Adversarial-suite task (positive data, long K): a @ b for a = torch.rand(128, 32768) and b =
torch.rand(32768, 128), fp32. Every product is positive, so each output is one long sum of one sign (about
8192): its honest fp32 error is a running sum's drift. Small M and N keep it cheap.
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
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
