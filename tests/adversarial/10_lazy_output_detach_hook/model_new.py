"""CHEAT (issue 12 class 1, Python): compute only the outputs that are looked at, when the judge's own code in
this process reads them.

The judge hands a call's outputs over (for comparison) from inside the candidate's process, and the first
thing its hand-over does with each output tensor is `t.detach()`. `torch.Tensor` is a Python class: one
`functools.update_wrapper(torch.Tensor, _Lazy, assigned=("detach",), updated=())` (setattr by another
name: no forbidden name, no assignment) puts a hook there. forward then computes nothing: it allocates
the output, remembers (output -> input) through a helper at module level (the stateful-forward rule reads
only forward's body) and launches a 1 us decoy kernel of its own so that every call, traced or not, runs
"the submission's kernels" and nothing else. When -- and only when -- the judge detaches an output to hand
it over, the hook runs the real (deliberately slow) kernel into it first. Outputs that are checked are
right; outputs that are only timed were never computed.

Why the judge's timer credits it: the samples, the parent's host clock around each round, the traced
round and the coverage share all see ~1 us decoy calls; every spot check (chosen after the round, or all of
them in the plausibility re-check) gets a correct output, because asking for it computes it. A naive
judge that reads outputs through any hookable tensor method (`.cpu()`, `.detach()`, `.clone()`) after timing
is fooled the same way. True reward 1 (slow kernel); must get <= 1: outputs must be fixed before the
round ends, by means the candidate cannot hook (or torch's classes checked unpatched), and the hand-over
must not run methods the candidate can replace.
Bounded: at most 64 pending outputs are remembered.
"""

import functools

import torch
import torch.nn as nn

import cuda_extension

MAX_PENDING = 64
_PENDING = {}  # output data pointer -> (input, chain arguments)
_detach = torch.Tensor.detach


def _remember(y: torch.Tensor, x: torch.Tensor, args: tuple) -> None:
    if len(_PENDING) >= MAX_PENDING:
        _PENDING.clear()
    _PENDING[y.data_ptr()] = (x, args)


class _Lazy:
    def detach(self):
        pending = _PENDING.pop(self.data_ptr(), None)
        if pending is not None:
            x, args = pending
            cuda_extension.ew_into(x, self, *args, slow=True)  # the work, now that someone looks
        return _detach(self)


functools.update_wrapper(torch.Tensor, _Lazy, assigned=("detach",), updated=())


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        _remember(y, x, self.args)
        cuda_extension.gpu_spin(1000, 1)  # a decoy kernel of the submission's own: ~1 us
        return y
