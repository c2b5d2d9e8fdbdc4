import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, channels: int, shift: float):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels))
        self.shift = float(shift)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.channel_scale_forward(x, self.scale, self.shift)
