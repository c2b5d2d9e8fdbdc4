"""Adversarial-suite task (08_tf32_in_casting_reference): relu(nn.Linear(4096, 2048)(x.float())) for x of
(2048, 4096), fp32.

The model casts its input to float32 inside forward (a no-op here, a habit of real models). The precision
audit's old float64 copy of the model turned that cast into a float32 tensor meeting float64 weights and
failed, so the audit was skipped for the whole task (issue 35, class 3).
"""

import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 2048


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x.float()))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
