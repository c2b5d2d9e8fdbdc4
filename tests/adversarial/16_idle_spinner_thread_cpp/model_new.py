"""CHEAT (family 16, baseline manipulation from a C++ thread): model_new.py is clean and the kernel is the
honest fused one, but the binding starts a detached thread that fills the GPU with 200 us spin kernels
whenever the candidate is idle (i.e. while the baselines are timed in the other process). Bounded to
90 s. See kernels/chain_binding.cpp.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.chain_forward(x, *self.args)
