import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.w = nn.Parameter(torch.randn(cols))
        self.b = nn.Parameter(torch.randn(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.affine_forward(x, self.w, self.b)
