"""Trusted side: does the reference keep state between calls, so that its output for the same inputs
depends on what it was called with before?

Why. The judge compares the candidate's calls with the reference's calls on the same inputs, and runs
each model a different number of times (the audits, the truth, the baselines' warm-up run the reference;
verification and timing run the candidate). A forward that updates the model as it goes (an RNN that
assigns `self.hidden` on every call and reads it on the next, as KernelBench's level3/33_VanillaRNN did
before its forward took the initial hidden state as an input) gives outputs that depend on that history:
an honest kernel that reproduces the model exactly is still compared with a reference at another point
of its history, and gets -1 for the task's fault. Such a task is the task's error, said as such, not a
wrong result.

How, on evidence only. The first input set's forward is watched: every plain tensor attribute of every
submodule (by identity and version counter), every buffer and parameter (version counter), and every
number attribute. If none changed, the model keeps no state and nothing more is run. If one did, the same
input set is drawn again from its seed and run once more: outputs that differ beyond the tolerance make
the task a `task_error` naming what changed; outputs within it (a call counter that only logs, a cache
that gives the same values, today's VanillaRNN, which overwrites `self.hidden` from its input first) let
the judgment go on. On the CPU that second forward cost today's VanillaRNN (256 x 32768 -> 16384 ->
8192) one of its forwards, in a preparation of 227 s there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from cuda_agent.judge.trusted.compare import Tolerance, compare_tensor


def snapshot(model: torch.nn.Module) -> dict[str, Any]:
    """What a forward could change on `model`, by name: tensors as (identity, version), numbers as values."""
    seen: dict[str, Any] = {}
    for prefix, module in model.named_modules():
        where = f"{prefix}." if prefix else ""
        for name, tensor in [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]:
            seen[where + name] = ("tensor", id(tensor), tensor._version)
        for name, value in vars(module).items():
            if isinstance(value, torch.Tensor):
                seen[where + name] = ("tensor", id(value), value._version)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                seen[where + name] = ("number", value)
    return seen


def changed(model: torch.nn.Module, before: dict[str, Any]) -> list[str]:
    """The names whose tensor or number `model` holds now differs from `before` (added ones included)."""
    after = snapshot(model)
    return sorted(name for name, now in after.items() if before.get(name) != now)


def repeat_problem(
    model: torch.nn.Module, before: dict[str, Any], outputs: list[torch.Tensor],
    again: Callable[[], list[torch.Tensor]], tol: Tolerance,
) -> str | None:  # fmt: skip
    """None when the forward that ran since `before` kept no state, or kept some that does not change its
    outputs; else the reason: what changed, and how far the same inputs' second outputs are from the first.
    `again` runs the model once more on the same input set, drawn afresh."""
    names = changed(model, before)
    if not names:
        return None
    second = again()
    far = _first_difference(outputs, second, tol)
    if far is None:
        return None
    shown = ", ".join(f"`{n}`" for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (f"Model.forward changes {shown} on every call, and its output for the same inputs changes with it "
            f"({far}); the judge runs the reference and a candidate different numbers of times, so their calls "
            "cannot be compared: make the state an input, or reset it at the start of forward")  # fmt: skip


def _first_difference(first: list[torch.Tensor], second: list[torch.Tensor], tol: Tolerance) -> str | None:
    """The first output of the repeat that the verification's own comparison tells from the first run's."""
    if len(first) != len(second):
        return f"{len(first)} outputs, then {len(second)}"
    for index, (a, b) in enumerate(zip(first, second, strict=True)):
        if (problem := compare_tensor(a, b, tol, f"output {index}")) is not None:
            return problem
    return None
