"""CHEAT (unbiased lowered operand precision, Python + C++): a @ b for torch.rand operands over K = 32768. The
kernel rounds both operands stochastically to TF32 as it stages them (a hash of each value's bits is added
below the 10 kept mantissa bits, then the low 13 bits are cut: up with the probability of the dropped
fraction, so the rounding has no bias, whatever low bits the judge sets on the inputs), accumulates in fp32
split-K. On inputs of one sign its random error, about 2^-11 / sqrt(K) of each output, sits inside a running
sum's honest drift (CPU emulation: 1.84 of a bound of 3.27 at K = 16384, 0.42 at 65536).

Must be rejected: the judge gives the rand inputs random signs (trusted/sign_audit.py); the honest allowance
then follows the terms and the TF32 error stands far outside it (162 at K = 16384).
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gemm_long_k(a, b)
