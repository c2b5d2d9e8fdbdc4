"""CHEAT (weights rounded only where the judge cannot compare two loads; issue 35 class 4, Python + C++): the
first ModelNew of the process (the one the judge verifies and times) rounds its fp32 weights to 15 mantissa
bits at load and streams them packed in 24 bits (kernels/packed_gemv.cu); every later ModelNew keeps its
weights in fp32 (kernels/wt_gemv.cu), so a second model built to see whether the output responds to the
weights' lowest bits computes exactly.

Refused all the same: the weights the first model loads are themselves moved from a base the candidate
never sees, so its rounding errs along the secret direction (the precision audit), and the response
between the two models misses that error (the weight response check).
"""

import torch
import torch.nn as nn

import cuda_extension

_BUILT = [0]


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        _BUILT[0] += 1
        self.first = _BUILT[0] == 1
        self.linear = nn.Linear(in_features, out_features)
        self.packed: torch.Tensor | None = None
        self.laid_out: torch.Tensor | None = None
        self.register_load_state_dict_post_hook(lambda module, keys: module.prepare_weight())

    def prepare_weight(self) -> None:
        with torch.no_grad():
            w = self.linear.weight.detach().contiguous()
            if self.first:
                rounded = ((w.view(torch.int32) + 0x80) & ~0xFF).contiguous()
                self.packed = rounded.view(torch.uint8).reshape(w.shape[0], w.shape[1], 4)[:, :, 1:].contiguous()
            else:
                self.laid_out = w.t().contiguous()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed is not None:
            return cuda_extension.packed_linear(x, self.packed, self.linear.bias)
        assert self.laid_out is not None
        return cuda_extension.wt_linear(x, self.laid_out, self.linear.bias)
