"""Trusted side: make every parameter matter, and find the answers that pass without doing the work.

Runs in the reference worker only (it never loads candidate code), on the reference model and inputs
the judge made. Two jobs, both about the same weakness: a submission that skips work which, at the
task's magnitudes, changes the output by less than the tolerance.

- `vary_constant_state`: constant parameters and buffers (defaults: norm weight 1 / bias 0, zero biases,
  running stats, ReZero scalars, LayerScale `1e-5 * ones`) get random values, so a submission cannot
  assume the defaults. Scalars (one element) are varied too: a ReZero gate is one.
- `make_parameters_matter`: for each floating parameter and buffer, the output with that tensor zeroed
  must differ from the true output beyond `margin` times the tolerance; if it does not, the tensor is
  scaled up by 10 until it does (at most `max_steps` times). A tiny gain (LayerScale 1e-5, a branch scaled by 1e-4)
  thus grows until skipping the branch it gates fails the comparison. What cannot be made to matter is
  reported, not failed (an unused parameter is the task's business).

After these, every parameter is moved to a generic point (perturb.py: no initialiser's structure survives)
and every input is made to matter on every draw (input_audit.py: a task that ignores one is a task_error).

The degenerate answers themselves (zeros, constants, an input returned as it is, a low-order polynomial
of an input) are in degeneracy.py; a task for which one passes on every input set is a
task_error, so a candidate can never be rewarded for matching one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from cuda_agent.judge.trusted.compare import Tolerance, passes_with

SKIPPED_BUFFERS = ("num_batches_tracked",)


def _state(model: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    seen: set[int] = set()
    found = []
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if id(tensor) in seen or not tensor.is_floating_point() or name.endswith(SKIPPED_BUFFERS):
            continue
        seen.add(id(tensor))
        found.append((name, tensor))
    return found


def vary_constant_state(model: torch.nn.Module) -> list[str]:
    """Replace every constant floating parameter or buffer (scalars included) with random values: of the
    same sign and scale for a nonzero constant, of magnitude 0.5 to 1.5 and random sign for zeros.

    Reference and candidate load the same state, so the comparison stays exact; what changes is that a
    submission can no longer assume the default values (e.g. skip an identity BatchNorm, a zero gate)."""
    varied = []
    with torch.no_grad():
        for name, tensor in _state(model):
            if tensor.numel() == 0:
                continue
            first = tensor.flatten()[0]
            if not bool((tensor == first).all()):
                continue
            value = float(first)
            noise = torch.empty_like(tensor).uniform_(0.5, 1.5)
            if value == 0.0:
                sign = torch.randint_like(tensor, 0, 2).mul_(2).sub_(1)
                tensor.copy_(noise * sign)
            else:
                tensor.copy_(noise * value)
            varied.append(name)
    return varied


def _outputs(model: torch.nn.Module, inputs: Sequence[Any]) -> list[torch.Tensor]:
    from cuda_agent.task import flatten_tensors

    fresh = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        return [t.detach().clone() for t in flatten_tensors(model(*fresh))]


def differs(expected: list[torch.Tensor], other: list[torch.Tensor], tol: Tolerance) -> bool:
    """Would `other` fail the judge's comparison against `expected`? (NaN where finite counts as failing.)"""
    if len(expected) != len(other):
        return True
    for ref, alt in zip(expected, other, strict=True):
        if ref.shape != alt.shape:
            return True
        if ref.is_floating_point():
            finite = torch.isfinite(ref)
            if bool((finite & ~torch.isfinite(alt)).any()):
                return True
        if not passes_with(ref, alt, tol):
            return True
    return False


def _finite(outputs: list[torch.Tensor]) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in outputs if t.is_floating_point())


def outputs_or_none(model: torch.nn.Module, inputs: Sequence[Any]) -> list[torch.Tensor] | None:
    """The model's outputs on copies of `inputs`, or None when the forward raises: where a moved parameter
    or a scaled input leaves the task's domain (perturb.py, input_audit.py)."""
    try:
        return _outputs(model, inputs)
    except torch.OutOfMemoryError:
        raise  # not the domain's edge: the task does not fit, which the reference worker reports as such
    except Exception:
        return None


def explained_by(model: torch.nn.Module, inputs: Sequence[Any], produced: Sequence[torch.Tensor], tol: Tolerance,
                 sentence: str) -> str | None:  # fmt: skip
    """`sentence` when the candidate's outputs that failed are what the reference gives on `inputs` (a draw
    without one of the judge's changes to it: the kernel did not follow that change), else None."""
    out = outputs_or_none(model, inputs)
    return None if out is None or differs(out, list(produced), tol) else sentence


def all_finite(outputs: list[torch.Tensor]) -> bool:
    """No NaN or Inf in any floating-point output."""
    return _finite(outputs)


def make_parameters_matter(
    model: torch.nn.Module,
    inputs: Sequence[Any],
    tol: Tolerance,
    max_steps: int = 6,
    margin: float = 4.0,
    budget_s: float = 5.0,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Scale up, by powers of 10, every parameter or buffer whose zeroing the tolerance cannot see.

    Returns {"scaled": {name: factor}, "do_not_matter": [names], "unaudited": [names]} for the verdict."""
    began = clock()
    wide = Tolerance(tol.atol * margin, tol.rtol * margin)  # skipping must fail clearly, not by a hair
    scaled: dict[str, float] = {}
    idle: list[str] = []
    unaudited: list[str] = []
    state = _state(model)
    with torch.no_grad():
        base = _outputs(model, inputs)
        for index, (name, tensor) in enumerate(state):
            if clock() - began > budget_s:
                unaudited = [n for n, _ in state[index:]]
                break
            factor = 1.0
            for step in range(max_steps + 1):
                saved = tensor.clone()
                tensor.zero_()
                zeroed = _outputs(model, inputs)
                tensor.copy_(saved)
                if differs(base, zeroed, wide):
                    break
                if step == max_steps or not bool(saved.abs().max() > 0):
                    idle.append(name)
                    break
                tensor.mul_(10.0)
                grown = _outputs(model, inputs)
                if not _finite(grown) and _finite(base):  # grew out of range: keep the last good size
                    tensor.copy_(saved)
                    idle.append(name)
                    break
                factor *= 10.0
                base = grown
            if factor != 1.0:
                scaled[name] = factor
    return {"scaled": scaled, "do_not_matter": idle, "unaudited": unaudited}
