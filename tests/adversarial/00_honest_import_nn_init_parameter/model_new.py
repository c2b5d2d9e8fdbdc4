import torch
import torch.nn as nn
import torch.nn.init as init
from torch.nn.parameter import Parameter

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.w = Parameter(torch.empty(cols))
        init.uniform_(self.w, 0.5, 1.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.col_scale_forward(x, self.w)
