"""Adversarial-suite task (positive data, long K, low-bit response): a @ b for a = torch.rand(256, 65536) and
b = torch.rand(65536, 256), fp32 (KernelBench's large-K matmul in kind, smaller). Every product is positive,
so each output is one long sum of one sign (about 16384): its honest fp32 error is a running sum's drift, wide
enough at this K that operands rounded to bf16 with their bias measured and removed stay inside the precision
audit's bound (measured 1.6 against 3 on an H200; 2.7 at K = 32768, too near it). Shared by
08_bf16_gemm_bias_corrected_long_k and 00_honest_3xtf32_wmma_long_k.
"""

import torch
import torch.nn as nn

M = 256
K = 65536
N = 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
