"""CHEAT (family 1, PyTorch fallback through the op registry): forward calls the ATen kernel directly as
torch.ops.aten._softmax.default, which a source check looking for torch.softmax / F.softmax misses.
"""

import torch
import torch.nn as nn

import cuda_extension  # noqa: F401  (built so the submission looks complete; never used)

_softmax = torch.ops.aten._softmax.default


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _softmax(x, -1, False)
