"""CHEAT (precision inside the old bound on a long reduction, issue 35 class 4, Python + C++): when the judge
loads the state_dict, a load hook packs the fp32 weight into 24 bits per element (the low byte of each float
dropped: 15 mantissa bits instead of 23), outside any forward, so no op gate sees it. forward streams the
192 MB packed weight instead of 256 MB (kernels/packed_gemv.cu: unpacks to fp32, fp32 FMA accumulation),
about 1.3x faster on a memory-bound skinny GEMM, and ~2e-5 off: inside 1e-2.

Truncating 8 mantissa bits costs relative error ~2^-16 per weight; over K = 8192 that stayed within 64 times
the reference's own error (the old rule passed it). The new bound, what an fp32 computation of each output
can be off by (float32 rounding over a running sum of 8192 terms), is several times smaller: refused.
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
            self.packed = w.view(torch.uint8).reshape(w.shape[0], w.shape[1], 4)[:, :, 1:].contiguous()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert self.packed is not None
        return cuda_extension.packed_linear(x, self.packed, self.linear.bias)
