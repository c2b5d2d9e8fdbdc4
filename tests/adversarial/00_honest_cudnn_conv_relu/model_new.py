"""Conv2d + ReLU as a cuDNN convolution (kernels/conv_cudnn.cpp) plus one fused bias + ReLU epilogue kernel.

`self.conv` is kept only so that the parameters (conv.weight, conv.bias) have the reference's names and
shapes; it is never called.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.pad = kernel_size // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.conv2d_relu_forward(x, self.conv.weight, self.conv.bias, self.pad, 1)
