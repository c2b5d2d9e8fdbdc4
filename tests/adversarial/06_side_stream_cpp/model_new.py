"""CHEAT (family 6, work escaping the timer, C++ side): model_new.py is clean; the binding launches the
fast fused kernel on a private non-blocking cudaStream_t (waiting for the caller's stream first) and
returns without joining back, so events on the caller's stream see only the launch. See
kernels/chain_binding.cpp.
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
