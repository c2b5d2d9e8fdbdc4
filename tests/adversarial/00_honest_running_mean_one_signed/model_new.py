"""HONEST (the kernel most people write for a mean over a middle dimension): one thread per output, a
plain fp32 running sum over the reduced dimension in index order, reads coalesced across the last
dimension, then one division. On the judge's inputs (positive, with the rounding probe's low bits) its
additions round one way once the sum is 2^13 times a term; the precision audit's truth works that drift out
(trusted/truth_drift.py). Must be accepted (it was refused at 20x the bound before, white-box probe of
2026-12-06).
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.running_mean_dim1(x)
