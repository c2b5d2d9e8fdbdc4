"""Candidate side: build ModelNew without drawing random initial parameters that are overwritten at once.

The candidate worker builds `ModelNew(*get_init_inputs())` on the CPU, as the original workspace and
KernelBench do, and then loads the reference's `state_dict` strictly: every parameter and persistent
buffer is replaced. The random draws of the standard layers' `reset_parameters` (`nn.init.kaiming_uniform_`
and its kin) are therefore thrown away, and on today's KernelBench sizes they are the construction's whole
cost: 38 of the 250 level 1-3 tasks hold over 50 M parameters (level3/2_ShallowWideMLP 2.1 G, four level-2
Matmul tasks 1.1 G each), and the CPU's generator draws them serially, for the first ModelNew of every
judgment and again for the weight pair's second (benchmarks/model_construction.py measures both ways).

`random_init_skipped()` makes the draws zero the tensor instead while ModelNew is built: the random
initialisers of `torch.nn.init` (looked up on the module, as the layers call them) and the two in-place
draws every one of them ends in, `Tensor.uniform_` and `Tensor.normal_` (which reach a layer that imported
an initialiser by name, as `nn.MultiheadAttention` does). Zeros rather than nothing: what the candidate's
`__init__` computes from its initial values stays finite and the same on every run. Deterministic
initialisers (`ones_`, `zeros_`, `eye_`, `dirac_`, `constant_`) run as before, and `torch.randn`/`torch.rand`
still draw (a tensor made with them may be a constant the candidate keeps). Nothing a ModelNew can rely on
changes: a value drawn at random in `__init__` is not the reference's, so only what `load_state_dict`
replaces can be right, and that is replaced. The reference worker does not use this: the reference's
initial values set the scale of the generic point its parameters are moved to (trusted/perturb.py).

Trust boundary: a convenience in the candidate's own process, like the rest of `candidate/`; a candidate that
puts the initialisers back pays for its own draws. An initialiser the candidate replaced while it was built
is left as the candidate set it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

# The random initialisers of torch.nn.init (torch 2.x), each applied to a tensor in place and returning it.
RANDOM_INITIALISERS = (
    "uniform_", "normal_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_",
    "xavier_uniform_", "xavier_normal_", "orthogonal_", "sparse_",
)  # fmt: skip
# The in-place draws those initialisers end in, as Tensor methods.
TENSOR_DRAWS = ("uniform_", "normal_")
_ABSENT = object()


def _zeroed(tensor: Any, *args: Any, **kwargs: Any) -> Any:
    """What a skipped draw leaves: the tensor, zeroed in place (under no_grad, as nn.init draws)."""
    import torch

    with torch.no_grad():
        return tensor.zero_()


@contextlib.contextmanager
def random_init_skipped() -> Iterator[list[str]]:
    """While inside, torch.nn.init's random initialisers and Tensor.uniform_/normal_ zero their tensor
    instead of drawing; yields the names replaced. Each is put back on exit (a Tensor method by removing
    the shadowing attribute) unless something else replaced it meanwhile."""
    import torch
    import torch.nn.init as init

    targets: list[tuple[Any, str]] = [(init, n) for n in RANDOM_INITIALISERS if callable(getattr(init, n, None))]
    targets += [(torch.Tensor, n) for n in TENSOR_DRAWS]
    kept = {(owner, name): vars(owner).get(name, _ABSENT) for owner, name in targets}
    for owner, name in targets:
        setattr(owner, name, _zeroed)
    try:
        yield sorted(f"{'Tensor' if owner is torch.Tensor else 'nn.init'}.{name}" for owner, name in targets)
    finally:
        for (owner, name), original in kept.items():
            if vars(owner).get(name) is not _zeroed:
                continue  # replaced meanwhile: left as it is
            if original is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
