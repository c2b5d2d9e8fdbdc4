"""The CUDA runtime library torch loaded into this process, for the few calls torch does not expose.

Plumbing shared by both sides of the trust boundary (the sampler disables L2 persistence with it; the
output hand-over registers its shared buffers with it). It establishes no fact of the reward.
"""

from __future__ import annotations

import ctypes
import functools


@functools.cache
def cuda_runtime() -> ctypes.CDLL | None:
    """The CUDA runtime torch loaded into this process, for the calls torch does not expose."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libcudart.so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None
