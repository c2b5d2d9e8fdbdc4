"""Your optimised model. Keep the constructor signature of `Model` in model.py.

Build your kernels with `bash utils/compile.sh`; it produces `cuda_extension`, which this file imports.
forward() may only allocate tensors (torch.empty*, torch.zeros*), take views, and call cuda_extension.
"""

import cuda_extension  # noqa: F401  (built from kernels/ by utils/compile.sh)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        raise NotImplementedError("write ModelNew: same constructor and parameters as Model in model.py")

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError
