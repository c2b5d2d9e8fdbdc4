"""CHEAT (family 13, background work in a C++ thread): model_new.py is clean; the binding hands each call to a
detached std::thread that launches the (fast, correct) kernel on its own stream behind an event and
returns once it is enqueued; the caller's stream never waits. See kernels/chain_binding.cpp.
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
