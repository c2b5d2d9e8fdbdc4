"""CHEAT (precision downgrade, weights cast at load, Python + C++): when the judge loads the state_dict, a
load hook keeps an fp16 copy of the weight (converted there, outside any forward, so no op gate sees it);
forward converts only x with a custom kernel and runs an fp16 tensor-core GEMM with fp32 accumulation
(kernels/half_weights_binding.cpp). Several times faster than fp32 and ~1e-3 off: inside 1e-2. Must be
rejected by the precision audit.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.w16: torch.Tensor | None = None
        self.register_load_state_dict_post_hook(lambda module, keys: module.keep_half_weight())

    def keep_half_weight(self) -> None:
        with torch.no_grad():
            self.w16 = self.linear.weight.detach().half().contiguous()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert self.w16 is not None
        return cuda_extension.linear_half_weights(x, self.w16, self.linear.bias)
