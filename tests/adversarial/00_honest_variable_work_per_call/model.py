"""Adversarial-suite task: a gated elementwise chain whose useful work varies from call to call.

y = gate[:, None] * clamp(gelu(x * 1.5 + 0.25), -0.1, 2.0) on an (8192, 4096) fp32 tensor; each call draws
the share of open gates (5-95% of the rows), so a kernel that skips the closed rows does a different
amount of work on every call, honestly.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8192
dim = 4096
scale = 1.5
shift = 0.25
clamp_min = -0.1
clamp_max = 2.0


class Model(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.scale = scale
        self.shift = shift
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        y = torch.clamp(F.gelu(x * self.scale + self.shift), self.clamp_min, self.clamp_max)
        return gate[:, None] * y


def get_inputs():
    share = torch.rand(()) * 0.9 + 0.05  # drawn per call, without leaving the device
    gate = (torch.rand(batch_size) < share).float()
    return [torch.randn(batch_size, dim), gate]


def get_init_inputs():
    return [scale, shift, clamp_min, clamp_max]
