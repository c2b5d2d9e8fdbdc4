"""Round-trip through fp8 e4m3 then scale: (8192, 4096) fp32 in and out."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).to(torch.float32) * self.scale


def get_inputs():
    return [torch.randn(8192, 4096) * 8.0]


def get_init_inputs():
    return [0.25]
