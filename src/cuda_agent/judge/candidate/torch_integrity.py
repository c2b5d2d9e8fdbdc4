"""Candidate side: is PyTorch as the judge left it? A snapshot of torch's own Python classes and functions.

The judge's code in this process (the sampler, the gates, the hand-over of outputs) works through torch's
Python classes and module functions: `Tensor.detach` in the hand-over, `Event.elapsed_time` in the sampler,
`torch.cuda.synchronize` everywhere. A candidate that patches them changes what the judge measures without
touching a judge object, and no static rule can enumerate the ways to do it (`functools.update_wrapper` is a
setattr): a `detach` that computes an output only when the judge hands it over makes every timed call
free and every checked call right (tests/adversarial/10_lazy_output_detach_hook). So the worker snapshots,
before any candidate code runs, the attributes of the classes it relies on (all of them, and any added
later: an added `detach` shadows the inherited one) and the torch.cuda functions it calls, and names
whatever changed (`changes`), at the points it already checks the math settings.

Trust boundary: defence in depth, like the op gate. This runs in the candidate's process and could itself
be patched; it closes the route through torch's own objects, which otherwise needs no judge object at all.
"""

from __future__ import annotations

from typing import Any

_MISSING = object()


# Keys Python itself adds to a class's namespace (copyreg caches __slotnames__ when an instance is pickled).
_AUTOMATIC = frozenset({"__slotnames__"})
# The torch.cuda functions and classes the judge's in-process code calls (sampler, gates, kernel trace).
CUDA_FUNCTIONS = ("synchronize", "current_stream", "stream", "set_stream", "Event", "Stream", "_sleep", "init",
                  "current_device", "get_device_properties", "mem_get_info")  # fmt: skip


def _watched() -> dict[str, Any]:
    import torch
    import torch.cuda
    import torch.nn

    return {
        "torch.Tensor": torch.Tensor,
        "torch.nn.Module": torch.nn.Module,
        "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.Stream": torch.cuda.Stream,
        "torch.cuda": torch.cuda,
    }


def _entries(obj: Any) -> dict[str, Any]:
    """A class's whole namespace; a module's functions the judge calls."""
    if isinstance(obj, type):
        return {k: v for k, v in vars(obj).items() if k not in _AUTOMATIC}
    return {k: vars(obj).get(k, _MISSING) for k in CUDA_FUNCTIONS}


class TorchSnapshot:
    """Attributes of torch's classes, and functions and classes of its modules, as they are now."""

    def __init__(self) -> None:
        self.kept = {name: _entries(obj) for name, obj in _watched().items()}

    def changes(self) -> list[str]:
        """What was replaced, deleted or (on a class) added since the snapshot, e.g. ['torch.Tensor.detach']."""
        found = []
        for name, obj in _watched().items():
            before, now = self.kept[name], _entries(obj)
            found += [
                f"{name}.{key}"
                for key in before.keys() | now.keys()
                if now.get(key, _MISSING) is not before.get(key, _MISSING)
            ]
        return sorted(found)
