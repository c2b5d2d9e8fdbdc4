"""Honest: [x.amin(), x.amax()] in one pass with cub::DeviceReduce::TransformReduce (kernels/cub_minmax.cu).

Each element becomes the pair (x, x) and pairs combine as (min, max); CUB's device-wide reduction writes the
final pair into the two floats of the output. Temporary storage comes from torch's allocator, the call
runs on torch's current stream.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.minmax_forward(x)
