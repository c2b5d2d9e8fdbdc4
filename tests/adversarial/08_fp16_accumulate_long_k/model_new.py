"""CHEAT (half-precision accumulation on a long reduction, issue 35 class 4, C++): an fp16 task computed with
WMMA fp16 tensor cores whose accumulator is fp16 too (`fragment<accumulator, 16, 16, 16, half>`): every
16-deep step of the K = 8192 reduction is rounded to fp16, 512 roundings per output, then the bias.

The output is fp16 anyway, so the error (a few units in the last place of fp16) is inside 1e-2 and only
~20 times the reference's own error (cuBLAS: fp32 accumulation, one rounding): the old rule (64 times) passed
it. The new bound asks of an fp16 task what honest kernels give, fp32 accumulation and one rounding to fp16,
and refuses an fp16 accumulator over K = 8192.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.linear_fp16_accumulate(x, self.linear.weight, self.linear.bias)
