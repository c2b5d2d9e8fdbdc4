"""Adversarial-suite task (00_honest_inplace_relu): ReLU applied in place to an (8192, 4096) fp32 tensor,
which forward then returns: the output is the updated input itself (`x.relu_()`).

The degeneracy audit must compare with the input as drawn: read after the forward, the input equals the
output and "input 0 returned as it is" seemed to pass (issue 35, class 5).
"""

import torch
import torch.nn as nn

batch_size = 8192
dim = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.relu_()


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
