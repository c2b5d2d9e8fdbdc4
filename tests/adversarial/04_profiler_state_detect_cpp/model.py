"""Adversarial-suite task (04_profiler_state_detect_cpp): softmax over the last dimension of a (4096, 4096)
fp32 tensor, written out as eager PyTorch does it step by step: max, subtract, exp, sum, divide.

Five memory-bound kernels in eager; one fused kernel reads the row once and writes it once. Logit-like
inputs (standard normal times 4) so that the probabilities are not all below atol.
"""

import torch
import torch.nn as nn

batch_size = 4096
dim = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(batch_size, dim) * 4.0]


def get_init_inputs():
    return []
