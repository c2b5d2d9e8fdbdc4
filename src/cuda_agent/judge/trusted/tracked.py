"""Trusted side: a tensor that carries its exact value and the error an honest computation of it can have.

The precision audit (precision.py) needs, for every output element, two numbers: the exact value of the
task's function (evaluated in float64) and how far a computation in the task's own precision can honestly
be from it. `Tracked` carries both through the reference model, op by op (truth.py runs the model under a
dispatch mode, the rule modules truth_ops.py names say how each op moves them):

- it *presents* the dtype the reference computes in (its nominal dtype: float32, float16, ...), so the
  model's own code (dtype checks, autocast, `.half()`, `dtype=` arguments) behaves as in the reference;
- `value` is the float64 payload: the exact value, where the model's casts to fp16/bf16 are kept as
  roundings (they are part of the task's meaning) and its casts to float32 become float64;
- `var` is the variance of the honest error of each element (the square of its allowance; +inf where a
  decision an honest computation could take the other way, a comparison or an argmax within the error,
  makes the element unknowable). `None` means exactly zero (inputs, parameters, constants): most of the
  work of the error model is skipped for them.

Integer and boolean tensors keep their own dtype in `value` (an index is never promoted); their `var`
is None or 0/+inf (an index that could flip).

A tensor and its views share one `_Root`, the variance buffer laid out like the value's storage: a view's
variance is that buffer seen through the view's geometry, so an in-place write into a slice of a tensor
is seen by every alias, as the value's is.
"""

from __future__ import annotations

from typing import Any

import torch

# Unit roundoff (half an ulp, relative) of each floating dtype. TF32 is not a dtype; it is float32 with
# 10 mantissa bits, the same unit as float16.
ROUNDOFF: dict[torch.dtype, float] = {
    torch.float64: 2.0**-53,
    torch.float32: 2.0**-24,
    torch.float16: 2.0**-11,
    torch.bfloat16: 2.0**-8,
}
for _name, _u in (("float8_e4m3fn", 2.0**-4), ("float8_e4m3fnuz", 2.0**-4), ("float8_e5m2", 2.0**-3),
                  ("float8_e5m2fnuz", 2.0**-3)):  # fmt: skip
    if hasattr(torch, _name):
        ROUNDOFF[getattr(torch, _name)] = _u

# Casts to these are kept in the truth as roundings (`.half()`, `.bfloat16()`, autocast, fake quantisation):
# the task asks for that precision there. Casts to float32 become float64.
LOW_PRECISION = frozenset(d for d in ROUNDOFF if d not in (torch.float64, torch.float32))

# The smallest magnitude an output element of this dtype is compared at: fp32 and bf16 kernels built with
# fast math flush subnormals to zero, fp16 keeps them (its subnormal step is 2^-24).
ABSOLUTE_FLOOR: dict[torch.dtype, float] = {
    torch.float64: torch.finfo(torch.float64).tiny,
    torch.float32: torch.finfo(torch.float32).tiny,
    torch.bfloat16: torch.finfo(torch.bfloat16).tiny,
    torch.float16: 2.0**-25,
}


def roundoff(dtype: torch.dtype) -> float:
    return ROUNDOFF.get(dtype, 2.0**-24)


def accumulation_roundoff(dtype: torch.dtype) -> float:
    """The precision a reduction of this nominal dtype accumulates in: float32 for float32 and every
    lower precision (what PyTorch, cuBLAS and cuDNN do, and what the audit asks of kernels), float64 for
    float64."""
    return ROUNDOFF[torch.float64] if dtype == torch.float64 else ROUNDOFF[torch.float32]


def round_to(value: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`value` rounded to `dtype` and back to float64: a cast the task asks for, kept in the truth."""
    return value.to(dtype).to(torch.float64)


class Untrackable(RuntimeError):
    """The reference does something the truth cannot follow in float64 (reads raw bytes, an op that has
    no float64 kernel): no truth can be made for this task."""


class _Root:
    """The variance buffer shared by a tensor and all its views (None while every element is exact)."""

    __slots__ = ("var",)

    def __init__(self, var: torch.Tensor | None = None) -> None:
        self.var = var


def _storage_elements(value: torch.Tensor) -> int:
    return value.untyped_storage().nbytes() // max(1, value.element_size())


class Tracked(torch.Tensor):
    """See the module docstring. Built with `Tracked.make` (a new root) or `Tracked.view_of` (an alias)."""

    value: torch.Tensor
    root: _Root

    @staticmethod
    def __new__(cls, value: torch.Tensor, nominal: torch.dtype, root: _Root) -> Tracked:
        made = torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined]
            cls, value.shape, strides=value.stride(), storage_offset=value.storage_offset(), dtype=nominal,
            device=value.device, requires_grad=False,
        )  # fmt: skip
        made.value = value
        made.root = root
        return made

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        # Every op on a Tracked tensor runs under TruthMode (truth.py), which handles it first.
        raise Untrackable(f"{func} ran on a tracked tensor outside the truth's evaluation")

    def __repr__(self) -> str:  # type: ignore[override]
        return f"Tracked(nominal={self.dtype}, shape={tuple(self.shape)})"

    @staticmethod
    def make(value: torch.Tensor, nominal: torch.dtype, var: torch.Tensor | None = None) -> Tracked:
        """A new tensor (no alias of another): `var` (same shape as `value`) is laid out like its storage."""
        if var is None or value.numel() == 0:
            return Tracked(value, nominal, _Root(None))
        var = var.to(torch.float64)
        n = _storage_elements(value)
        if value.is_contiguous() and value.storage_offset() == 0 and n == value.numel():
            buffer = var.contiguous().reshape(-1)
        else:
            buffer = torch.zeros(n, dtype=torch.float64, device=value.device)
            buffer.as_strided(value.shape, value.stride(), value.storage_offset()).copy_(var.expand(value.shape))
        return Tracked(value, nominal, _Root(buffer))

    @staticmethod
    def view_of(value: torch.Tensor, nominal: torch.dtype, base: Tracked) -> Tracked:
        """An alias of `base` (a view op's result): it shares base's variance buffer."""
        return Tracked(value, nominal, base.root)

    @property
    def var(self) -> torch.Tensor | None:
        if self.root.var is None:
            return None
        return self.root.var.as_strided(self.value.shape, self.value.stride(), self.value.storage_offset())

    def write_var(self, var: torch.Tensor | None) -> None:
        """Set the variance of this tensor's elements (an in-place op wrote them)."""
        if var is None and self.root.var is None:
            return
        if self.root.var is None:
            self.root.var = torch.zeros(_storage_elements(self.value), dtype=torch.float64, device=self.value.device)
        target = self.var
        assert target is not None
        if var is None:
            target.zero_()
        else:
            target.copy_(var.expand(target.shape))


def is_float(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and t.is_floating_point()


def payload(a: Any) -> Any:
    """What an op computes on: the float64 value of a Tracked tensor, a plain tensor as it is."""
    return a.value if isinstance(a, Tracked) else a


def var_of(a: Any) -> torch.Tensor | None:
    return a.var if isinstance(a, Tracked) else None


def exact(value: torch.Tensor) -> Tracked:
    """A tensor with no error of its own (an input, a parameter, a constant), promoted if floating."""
    if value.is_floating_point():
        return Tracked.make(value.detach().to(torch.float64, copy=True), value.dtype)
    return Tracked.make(value.detach().clone(), value.dtype)  # a copy: the truth never writes the reference's
