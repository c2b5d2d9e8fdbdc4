"""The MLP as one cuBLAS SGEMM + fused bias/ReLU epilogue per layer; `self.network` holds the parameters."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, input_size, layer_sizes):
        super().__init__()
        layers = []
        current = input_size
        for size in layer_sizes:
            layers.append(nn.Linear(current, size))
            layers.append(nn.ReLU())
            current = size
        self.network = nn.Sequential(*layers)
        self.linears = [m for m in self.network if isinstance(m, nn.Linear)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for linear in self.linears:
            x = cuda_extension.gemm_bias_relu_forward(x, linear.weight, linear.bias)
        return x
