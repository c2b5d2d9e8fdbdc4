import functools
import itertools
import operator

import torch
import torch.nn as nn

import cuda_extension


def numel(shape) -> int:
    return functools.reduce(operator.mul, shape, 1)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.w = nn.Parameter(torch.empty(cols))
        # every (row-block, col-block) pair the kernel may be tuned for; only a launch hint
        self.tiles = list(itertools.product((64, 128), (32, 64)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert numel(x.shape) == x.numel()
        return cuda_extension.col_scale_forward(x, self.w)
