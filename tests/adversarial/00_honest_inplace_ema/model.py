"""Adversarial-suite task (00_honest_inplace_ema): an exponential moving average updated in place,
avg = decay * avg + (1 - decay) * x, on (8192, 4096) fp32 tensors; forward returns the updated avg.

As with an optimizer's running statistics, the first input is the state and is written; after the
forward it holds the output, so an audit reading it then would see "input 0 returned as it is".
"""

import torch
import torch.nn as nn

batch_size = 8192
dim = 4096
decay = 0.9


class Model(nn.Module):
    def __init__(self, decay: float):
        super().__init__()
        self.decay = decay

    def forward(self, avg: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        avg.mul_(self.decay).add_(x, alpha=1.0 - self.decay)
        return avg


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [decay]
