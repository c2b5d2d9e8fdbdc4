"""Adversarial-suite task (08_bf16_in_dtype_arg_reference): softmax(x @ W * 3, dim=-1, dtype=torch.float32)
for x of (4096, 2048) and W of (2048, 1024), fp32.

The softmax is asked for with `dtype=torch.float32` (a habit of real models, so the softmax is computed in
float32 whatever the logits are). The precision audit's old float64 copy of the model got a float32 output
back from it and skipped the output (issue 35, class 3). The logits are scaled so the rows are peaked: the
largest probabilities are far above the tolerance, so zeros or a constant do not pass.
"""

import torch
import torch.nn as nn

batch_size = 4096
in_features = 2048
out_features = 1024


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * (3.0 / in_features**0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x @ self.weight, dim=-1, dtype=torch.float32)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
