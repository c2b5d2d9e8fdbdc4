"""Conv2d 3x3, stride 1, padding 1, by Winograd's F(4x4, 3x3) in fp32 (kernels/winograd_f4x4.cu).

`self.conv` is kept only so that the parameters (conv.weight, conv.bias) have the reference's names and
shapes; it is never called.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.winograd_conv3x3_forward(x, self.conv.weight, self.conv.bias)
