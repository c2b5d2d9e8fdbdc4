"""Honest: the strided convolution with cuDNN (kernels/cudnn_conv.cpp: the extension's own cuDNN handle bound
to torch's current stream, FMA-only fp32 math, workspace from torch's allocator) and BatchNorm (eval: running
statistics) + ReLU in one own epilogue kernel (kernels/bn_relu.cu).

`self.conv` and `self.bn` are kept only so that the parameters and buffers match the reference (conv.weight,
bn.weight, bn.bias, bn.running_mean, bn.running_var); neither is ever called.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bn = self.bn
        return cuda_extension.conv_bn_relu_forward(
            x, self.conv.weight, bn.running_mean, bn.running_var, bn.weight, bn.bias, bn.eps, 2, 1
        )
