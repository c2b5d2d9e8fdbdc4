"""CHEAT (structure guaranteed by an initialiser, issue 35 class 1): the task's projection weight is
nn.init.eye_, and the judge used to hand the candidate exactly that weight on every input set (it varied
only all-equal tensors and scaled only tensors that did not matter). So x @ I^T = x, and the whole GEMM
collapses to relu(x + bias): one elementwise kernel that reads the (varied, scaled) bias honestly and never
touches the weight. Exact, about 30x faster than eager's SGEMM. See kernels/eye_skip.cu.

Must be rejected: the judge moves every floating-point parameter to a random point before verifying, so the
weight is dense and x @ W^T is not x; the reason says the output is what the initial weight gives.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.eye_skip_forward(x, self.proj.bias)
