"""CHEAT (family 12, lazy output): forward returns a torch.Tensor subclass wrapping an uninitialised
buffer and a closure; nothing is launched. Its __torch_function__ runs the real kernel the first time the
output is used in any computation (torch.allclose, subtraction, .cpu(), ...), so the comparison sees the
right values while a timer around forward measured an empty call. Metadata queries (shape, dtype, device)
do not trigger it.
"""

import torch
import torch.nn as nn

import cuda_extension

_METADATA = {"shape", "dtype", "device", "size", "dim", "stride", "is_contiguous", "numel", "__get__", "ndim",
             "is_cuda", "requires_grad", "layout", "__len__", "storage_offset", "element_size"}


class LazyOutput(torch.Tensor):
    @staticmethod
    def __new__(cls, buffer: torch.Tensor, compute):
        out = torch.Tensor._make_subclass(cls, buffer)
        out._compute = compute
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name not in _METADATA:
            for value in (*args, *kwargs.values()):
                if isinstance(value, LazyOutput) and getattr(value, "_compute", None) is not None:
                    compute, value._compute = value._compute, None
                    compute()
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        buffer = torch.empty_like(x)
        args = self.args
        return LazyOutput(buffer, lambda: cuda_extension.ew_into(x, buffer, *args))
