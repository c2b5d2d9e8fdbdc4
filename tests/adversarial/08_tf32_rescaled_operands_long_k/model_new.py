"""CHEAT (lowered operand precision that escapes the rounding probe, Python + C++): a @ b for torch.rand operands
over K = 32768. The kernel multiplies both operands by 4/3 and rounds them to TF32 as it stages them (what a
TF32 tensor core computes on), accumulates in fp32 split-K, and multiplies the result by 9/16. The judge sets
low mantissa bits of every input so that rounding to TF32 errs one way; the factor 4/3 moves those bits, so
the rounding errs either way again and its error cancels to about 2^-11 / sqrt(K) of each output: on inputs
of one sign, inside a running sum's honest drift (CPU emulation: 1.48 of a bound of 3.27 at K = 16384).

Must be rejected: the judge gives the rand inputs random signs (trusted/sign_audit.py), the honest allowance
then follows the terms, not a growing partial sum, and the TF32 error stands far outside it (141 at K = 16384).
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gemm_long_k(a, b)
