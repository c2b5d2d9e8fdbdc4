"""Honest: LayerNorm with a templated kernel (layernorm_rows<256, 4>: a mangled name with template
arguments) whose block reductions are cub::BlockReduce, compiled into the extension.

`self.ln` is kept only so that the parameters (ln.weight, ln.bias) match the reference; it is never called.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.ln = nn.LayerNorm(dim, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.layernorm_forward(x, self.ln.weight, self.ln.bias, self.ln.eps)
