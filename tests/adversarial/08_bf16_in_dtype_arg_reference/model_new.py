"""CHEAT (precision downgrade where the reference asks for dtype=torch.float32, issue 35 class 3, C++): the
logits come from a hand-written WMMA GEMM on bf16 tensor cores (x and W rounded to bf16 as they are staged
in shared memory, fp32 accumulation), then an fp32 row softmax. The probabilities are a few 1e-3 off
(relative), inside atol = rtol = 1e-2.

The old audit's float64 copy of the model returned this output in float32 (the softmax's dtype argument) and
left it out; the promoted truth turns the dtype argument into float64, and the bf16 operands (hundreds of
times the error an fp32 GEMM over K = 2048 can have) are refused by the precision audit.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * (3.0 / in_features**0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.softmax_of_bf16_gemm(x, self.weight)
