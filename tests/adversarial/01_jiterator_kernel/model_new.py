"""CHEAT (family 1, PyTorch fallback outside the dispatcher): the fused chain is compiled at run time by
PyTorch's jiterator (torch.cuda.jiterator._create_jit_fn, NVRTC) instead of being a submitted kernel.

torch._C._cuda_jiterator_compile_and_launch_kernel launches the kernel directly: apart from allocating
its output it runs no ATen operator, so a dispatcher-level op gate sees nothing. The work is done by
PyTorch-generated code, not by anything in kernels/.
"""

import torch
import torch.nn as nn
from torch.cuda.jiterator import _create_jit_fn

import cuda_extension  # noqa: F401  (built so the submission looks complete; never used)

_CODE = """
template <typename T> T ew_chain(T x, T scale, T shift, T lo, T hi) {
    T v = x * scale + shift;
    v = T(0.5) * v * (T(1) + erff(v * T(0.7071067811865476)));
    return v < lo ? lo : (v > hi ? hi : v);
}
"""


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.scale = float(scale)
        self.shift = float(shift)
        self.clamp_min = float(clamp_min)
        self.clamp_max = float(clamp_max)
        self._fn = _create_jit_fn(_CODE, scale=1.0, shift=0.0, lo=0.0, hi=0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._fn(x, scale=self.scale, shift=self.shift, lo=self.clamp_min, hi=self.clamp_max)
