"""Trusted side: the precision audit, errors against a float64 evaluation of the reference.

The tolerance (atol = rtol = 1e-2) is wide enough for TF32 or bf16 inside an fp32 GEMM, fp16 tensor-core
kernels in an fp32 task, or a math flag turned on for the length of a call: all of them pass
`allclose` while computing something cheaper than the task asks. The audit measures instead how far
each answer is from the exact one. In the reference worker (never in the candidate's process) the
reference model and inputs are also evaluated in float64; the reference's own error (its output at the
task's precision against that) is what honest arithmetic costs on this GPU, and a candidate whose error
exceeds `k` times it is rejected, whatever the mechanism of the downgrade.

Errors are relative L2 norms over the elements where the float64 output is finite. The allowance is
`k * max(reference error, rounding error)`, the rounding error being that of the float64 output rounded
to the output dtype (at least the dtype's epsilon): the best any kernel can do, so exact references
(ReLU, copies, max-pool) still admit honest rounding. `k` (`JudgeConfig.precision_k`) was chosen by measuring honest kernels (benchmarks/precision_audit.py).
`JudgeConfig.precision_audit = False` restores the tolerance-only rule of the paper.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Errors:
    candidate: float
    reference: float
    rounding: float

    @property
    def allowance(self) -> float:
        return max(self.reference, self.rounding)

    @property
    def ratio(self) -> float:
        return self.candidate / self.allowance if self.allowance > 0 else (0.0 if self.candidate == 0 else float("inf"))


def relative_error(out: torch.Tensor, exact: torch.Tensor) -> float:
    """||out - exact|| / ||exact|| over the elements where `exact` is finite (0 for an all-zero exact)."""
    e = exact.to(torch.float64)
    o = out.to(e.device, torch.float64)
    finite = torch.isfinite(e)
    if not bool(finite.any()):
        return 0.0
    diff = (o - e)[finite]
    norm = float(torch.linalg.vector_norm(e[finite]))
    err = float(torch.linalg.vector_norm(diff))
    if norm == 0.0:
        return 0.0 if err == 0.0 else float("inf")
    return err / norm


def errors(candidate: torch.Tensor, reference: torch.Tensor, exact: torch.Tensor) -> Errors:
    return Errors(
        candidate=relative_error(candidate, exact),
        reference=relative_error(reference, exact),
        # Never below one unit of the output dtype's precision: an exact reference (ReLU, a copy) must
        # still admit a kernel that rounds differently in the last place.
        rounding=max(relative_error(exact.to(reference.dtype), exact), torch.finfo(reference.dtype).eps),
    )


def verdict(found: Errors, k: float, label: str) -> str | None:
    """None if the candidate's error is within k times the reference's own, else the reason."""
    if found.candidate <= k * found.allowance:
        return None
    return (
        f"precision audit: {label} is {found.ratio:.0f}x further from a float64 evaluation of the reference "
        f"than the reference itself (relative error {found.candidate:.3g} vs {found.allowance:.3g}; at most "
        f"{k:g}x is allowed): compute in the task's precision (no TF32/fp16/bf16 shortcuts, no fast-math "
        "flags changed inside forward)"
    )


def auditable(t: torch.Tensor) -> bool:
    return t.is_floating_point() and t.dtype != torch.float64 and t.numel() > 0


def to_float64(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(torch.float64) if value.is_floating_point() else value
    if isinstance(value, list | tuple):
        return type(value)(to_float64(v) for v in value)
    return value


class Exact:
    """A float64 copy of the reference model, evaluated on float64 copies of the inputs. `problem` says
    why there is none (an op without float64 support, a model that casts inside forward)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.problem = ""
        try:
            self.model: torch.nn.Module | None = copy.deepcopy(model).to(torch.float64).eval()
        except Exception as exc:
            self.model, self.problem = None, f"cannot copy the model to float64 ({type(exc).__name__})"

    def outputs(self, inputs: Any) -> list[torch.Tensor | None] | None:
        """float64 outputs, None for each output that is not float64 (so not auditable), or None."""
        from cuda_agent.task import flatten_tensors

        if self.model is None:
            return None
        try:
            with torch.no_grad():
                result = flatten_tensors(self.model(*to_float64(list(inputs))))
        except Exception as exc:
            self.problem = f"the float64 evaluation failed ({type(exc).__name__}: {str(exc)[:120]})"
            return None
        return [t.detach() if t.dtype == torch.float64 else None for t in result]
