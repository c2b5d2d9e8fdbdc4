# Refused: the CUDA source is read from a file next to it at run time, which no static reading can see.
from pathlib import Path

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = (Path(__file__).parent / "relu_kernel.cu").read_text()

relu = load_inline(
    name="relu_from_file",
    cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
    cuda_sources=cuda_source,
    functions=["relu_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu.relu_cuda(x)
