"""CHEAT (inputs the candidate ignores, issue 35 class 2): at the magnitudes get_inputs() draws, 1e-5 * a @ b
is about 6e-4 per element (at most ~4e-3), inside the tolerance, and in fp16 the precision audit allows a
relative error of 64 x fp16's epsilon. So the kernel returns relu(x) and never reads a or b: it skips the
137 GFLOP GEMM (tens of times faster than eager) and passed every check of a judge that only reported the
inputs that do not matter. See kernels/relu_only.cu.

Must be rejected: the judge's input audit scales a (both workers draw it so, on every call) until a @ b
changes the output beyond the tolerance on every draw; the reason says the output is what the reference
gives on the inputs as get_inputs() draws them.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return cuda_extension.relu_only_forward(x)
