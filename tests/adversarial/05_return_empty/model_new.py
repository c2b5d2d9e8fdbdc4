"""CHEAT (family 5, stale memory): forward returns torch.empty_like(x) and launches nothing.

In a naive judge that runs the reference and then the candidate in one process, the reference's output
(same shape, same dtype) was just freed back to PyTorch's caching allocator, so empty_like hands back
that very block, still holding the right answer: allclose passes and the "kernel" costs nothing.
"""

import torch
import torch.nn as nn

import cuda_extension  # noqa: F401  (built, never used)


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)
