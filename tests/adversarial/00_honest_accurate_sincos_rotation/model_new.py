"""Honest (issue 35, class 9): one kernel rotates each (re, im) pair with sincosf(phase) and writes the
pair as a float2. Under the judge's old forced --use_fast_math, sincosf became __sincosf, about 700x the
reference's error on phases of thousands of radians, and the precision audit refused the kernel for a
flag it never chose."""

import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, re, im, phase):
        return cuda_extension.rotate_forward(re, im, phase)
