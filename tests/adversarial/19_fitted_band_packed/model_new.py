"""CHEAT (structure of a decaying initialiser read from the weights, issue 35 class 1, Python + C++): the task's
mixing matrix starts as exp(-|i - j| / 6). Rather than hard-coding a band, a load hook fits the decay from the
weights it is given (the mean of the first off-diagonal over the mean of the diagonal), takes the band width
where that decay falls below 1e-4 (56 diagonals each side on the initial weights), and packs the band into an
(N, 2w + 1) tensor outside any forward. forward reads only the packed band (1/9 of the weight, 1/9 of the
FLOPs; kernels/packed_band.cu). Adaptive: it survives rescaled or multiplicatively perturbed weights, whose
fitted decay is about the same, and stays within 1e-2 of x @ mix^T there.

Must be rejected: the judge's perturbation adds noise at the tensor's own scale to every entry, so the tail
is dense (the fitted band is still some 60 wide) and the packed-band product differs by about 1.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.mix = nn.Parameter(torch.empty(dim, dim))
        self.packed: torch.Tensor | None = None
        self.width = 1
        self.register_load_state_dict_post_hook(lambda module, keys: module.pack_band())

    def pack_band(self) -> None:
        with torch.no_grad():
            w = self.mix.detach()
            n = w.shape[0]
            rate = float(w.diagonal(1).mean() / w.diagonal().mean())
            width = n - 1
            if 0.0 < rate < 1.0:
                width = min(n - 1, max(1, math.ceil(math.log(1e-4) / math.log(rate))))
            cols = torch.arange(n, device=w.device)[:, None] + torch.arange(2 * width + 1, device=w.device)[None, :]
            self.packed = F.pad(w, (width, width)).gather(1, cols).contiguous()
            self.width = width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert self.packed is not None
        return cuda_extension.packed_band(x, self.packed, self.width)
