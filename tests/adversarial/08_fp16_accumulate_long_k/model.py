"""Adversarial-suite task (08_fp16_accumulate_long_k): nn.Linear(8192, 2048) in fp16 on x of (2048, 8192),
fp16. An fp16 task with a long reduction (K = 8192): cuBLAS accumulates in fp32 and rounds the result to fp16.
"""

import torch
import torch.nn as nn

batch_size = 2048
in_features = 8192
out_features = 2048


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def get_inputs():
    return [torch.randn(batch_size, in_features, dtype=torch.float16)]


def get_init_inputs():
    return [in_features, out_features]
