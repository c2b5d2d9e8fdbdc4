import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in1: int, in2: int, out: int):
        super().__init__()
        self.bilinear = nn.Bilinear(in1, in2, out)

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        return cuda_extension.bilinear_forward(x1, x2, self.bilinear.weight, self.bilinear.bias)
