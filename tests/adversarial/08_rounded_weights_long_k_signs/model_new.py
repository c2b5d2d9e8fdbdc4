"""CHEAT (weights stored in fewer bits, rounded, on a long reduction with terms of both signs; issue 35
class 4, Python + C++): when the judge loads the state_dict, a load hook rounds each fp32 weight to nearest
at 15 mantissa bits and packs it into 24 bits (the top three bytes), outside any forward. forward streams
the 192 MB packed weight instead of 256 MB (kernels/packed_gemv.cu: fp32 FMA accumulation).

Rounded (not truncated) weights err at random around the loaded values, and at K = 16384 on randn inputs
that stayed inside what an fp32 running sum may drift (docs/design/precision.md: from K of about 12k).
The loaded weights' lowest bits are moved along a secret direction, so the rounding errs along it (the
precision audit), and a second ModelNew loaded with those bits moved again rounds to the same packed
weights (the weight response check): refused either way.
"""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.packed: torch.Tensor | None = None
        self.register_load_state_dict_post_hook(lambda module, keys: module.pack_weight())

    def pack_weight(self) -> None:
        # bytes 1..3 of each little-endian fp32 (sign, exponent, top 15 mantissa bits): 3 bytes per weight
        with torch.no_grad():
            w = self.linear.weight.detach().contiguous()
            rounded = ((w.view(torch.int32) + 0x80) & ~0xFF).contiguous()  # to nearest at bit 8 (ties away)
            self.packed = rounded.view(torch.uint8).reshape(w.shape[0], w.shape[1], 4)[:, :, 1:].contiguous()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert self.packed is not None
        return cuda_extension.packed_linear(x, self.packed, self.linear.bias)
