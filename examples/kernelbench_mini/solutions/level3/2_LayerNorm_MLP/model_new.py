"""LayerNorm kernel, then cuBLAS SGEMM + fused bias/ReLU epilogue; `norm` and `fc` hold the parameters."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim, hidden, eps):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)
        self.fc = nn.Linear(dim, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = cuda_extension.layernorm_forward(x, self.norm.weight, self.norm.bias, self.norm.eps)
        return cuda_extension.gemm_bias_relu_forward(y, self.fc.weight, self.fc.bias)
