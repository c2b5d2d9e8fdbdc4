"""HONEST (issue 33: a kernel whose per-call time legitimately varies). One fused pass computes
gate[:, None] * clamp(gelu(x * 1.5 + 0.25), -0.1, 2.0) and skips reading the rows whose gate is 0 (it
writes their zeros): the task draws the share of open rows per call (5-95%), so one call reads far less
than the next. Timed by each round's total work over its calls, it is charged what its calls take on
average, and must keep the reward of a kernel that beats eager and torch.compile on traffic.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        return cuda_extension.gated_chain_forward(x, gate, *self.args)
