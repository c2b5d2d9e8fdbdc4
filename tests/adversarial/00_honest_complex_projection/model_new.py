"""HONEST: torch.complex(x @ Wr, x @ Wi) with two fp32 shared-memory tiled GEMMs (64 x 64 tiles, 4 x 4 outputs
per thread, fp32 accumulation) into a workspace, then one kernel that interleaves the real and imaginary
parts into the complex64 output. Both parts computed in fp32: must be accepted. The judge has no float64
truth for a complex output (its float64 run does not follow complex tensors), so the reward is capped at 1.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.wr = nn.Parameter(torch.randn(in_features, out_features) / in_features**0.5)
        self.wi = nn.Parameter(torch.randn(in_features, out_features) / in_features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.complex_proj(x, self.wr, self.wi)
