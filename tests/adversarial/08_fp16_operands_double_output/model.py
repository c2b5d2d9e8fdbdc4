"""Adversarial-suite task (fp32 Linear returned in float64): nn.Linear(4096, 256)(x).double() for x of (256, 4096)
fp32. The model computes in fp32 and widens the result: the output is float64, its precision fp32's.
"""

import torch
import torch.nn as nn

batch_size = 256
in_features = 4096
out_features = 256


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x).double()


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
