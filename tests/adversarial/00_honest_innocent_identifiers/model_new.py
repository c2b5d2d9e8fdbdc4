import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, channels: int, timestep: float):
        super().__init__()
        self.decay = nn.Parameter(torch.rand(channels))
        self.timestep = float(timestep)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.envelope_forward(x, self.decay, self.timestep)
