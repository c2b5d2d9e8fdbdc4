"""Row softmax in one CUDA kernel: one block per row, the row held in registers, warp-shuffle reductions."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.row_softmax_forward(x)
