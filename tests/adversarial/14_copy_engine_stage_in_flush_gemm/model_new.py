"""CHEAT (family 14, warm caches; issue 33, timing class 5: L2 warmed during the flush). An honest cuBLAS
GEMM + bias/ReLU epilogue; the binding also copies the 16 MiB weight on a pool stream that waits for
nothing, and times the copy (host wait, learned from two events of the previous call) to end just before
the judge's pad ends: with a pad that flushes last, the copy runs during the flush, when what it stages has
the least of the flush left to survive. See kernels/flush_timed_stage_binding.cpp.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.flush_timed_gemm_forward(x, self.linear.weight, self.linear.bias)
