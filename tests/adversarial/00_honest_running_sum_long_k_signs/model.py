"""Adversarial-suite task (positive data, longer K): a @ b for a = torch.rand(128, 65536) and b =
torch.rand(65536, 128), fp32. As drawn every product is positive (each output a sum of about 16384); the judge gives the inputs
random signs (trusted/sign_audit.py), where a running sum's drift is what the terms give. Small M and N keep
it cheap.
"""

import torch
import torch.nn as nn

M = 128
K = 65536
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
