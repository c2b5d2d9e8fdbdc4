"""CHEAT (lowered operand precision on a long positive reduction, Python + C++): a @ b for torch.rand operands
over K = 32768. The kernel rounds both operands to TF32 as it stages them (cvt.rna.tf32.f32 in inline PTX, 10 mantissa bits, kept in fp32 registers, what TF32
tensor cores do, 5-15x faster than fp32 FMA), accumulates in fp32 with split-K and sums the 64 partials in
order. On uniform [0, 1) data the rounding errors are random and cancel to about 2^-11 / sqrt(K) of each output,
below a running sum's honest fp32 drift over 32768 positive terms, which the audit must allow: the old
precision audit passed it. See kernels/gemm_long_k.cu.

Must be rejected: the judge sets low mantissa bits of every generic fp32 input, so rounding to TF32 errs
the same way on every operand; the error then grows like K and stands far outside the allowance.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gemm_long_k(a, b)
