"""Honest (issue 35, class 9): one float4 kernel computing amp * sinf(theta). The judge's build used to
force --use_fast_math, which silently made `sinf` the approximate `__sinf`: on phases of thousands of
radians that is ~800x the reference's error, and the precision audit refused the kernel for a flag it never
chose. Built without fast math, `sinf` is the accurate function."""

import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, amp, theta):
        return cuda_extension.scaled_sin_forward(amp, theta)
