"""HONEST (the least accurate honest summation order, Python + C++): a @ b for torch.rand operands over
K = 65536 in plain fp32, one running sum per output in K order, no split-K, no tree. On the inputs the judge
draws (random signs given to the rand inputs by the sign audit, low mantissa bits set by the rounding probe)
its rounding drift is what the precision audit's allowance is made of. Must be accepted (reward >= 1: it is
slower than cuBLAS, and correct).
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gemm_long_k(a, b)
