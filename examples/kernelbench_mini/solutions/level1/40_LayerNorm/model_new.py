"""LayerNorm in one kernel (one block per row, warp-shuffle reductions); `self.ln` holds the parameters."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int, eps: float):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.layernorm_forward(x, self.ln.weight, self.ln.bias, self.ln.eps)
