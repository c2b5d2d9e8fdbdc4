"""CHEAT (lowered operand precision with the bias measured and removed, Python + C++): a @ b for torch.rand
operands over K = 65536. The binding rounds both operands to bf16 (round to nearest, 7 mantissa bits) and
multiplies them on bf16 tensor cores with fp32 accumulation (cublasGemmStridedBatchedEx over 128 K slices:
CUDA_R_16BF operands, CUDA_R_32F output, CUBLAS_COMPUTE_32F; no refused math-mode name anywhere). The judge's
rounding probe sets a low mantissa bit of every generic fp32 input so that bf16 rounding errs one way and
the error of a one-signed sum grows like K. The kernel removes exactly that bias: while rounding, two small
reduction kernels measure, per row i of a, c_a[i] = sum_k (bf16(a[i,k]) - a[i,k]) / sum_k a[i,k] and, per
column j of b, c_b[j] = sum_k (bf16(b[k,j]) - b[k,j]) / sum_k b[k,j] (in double), and the epilogue sums the
slices in order and returns G[i,j] * (1 - c_a[i] - c_b[j]). What is left is the spread of the rounding
errors about their mean, which averages down like 1/sqrt(K): the result is about as accurate as an honest
fp32 running sum, and the precision audit passes it (H200: 1.6 against the bound 3.05 at this K; 2.7 at
K = 32768; 3.4 there with one cublasGemmEx over the whole K). See kernels/bf16_round_bias.cu and
kernels/gemm_bf16.cpp.

Must be rejected: the low-bit response check runs two input sets that differ only in mantissa bits 0-11 of
every input, moved along a secret direction (balanced along each row). Both copies round to the same bf16
operands, so G is the same twice; only the correction factors move (b's column sums see part of b's move),
and the output misses about half of the exact change (H200: alignment -246 where honest noise stays below
6, 49% missed): "low-bit response check". "precision audit" is accepted too, in case another GPU's
accumulation pushes the plain statistic over its bound first.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gemm_long_k(a, b)
