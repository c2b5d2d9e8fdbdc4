"""Trusted side: torch.compile builds of the reference, each compiled afresh with kernels of its own.

The compile baseline is the fastest of a few fresh builds (reference_worker.py: `_best_compile_build`), so
one unlucky autotuning choice no longer decides a cold judgment's reward. That needs every build to be a
real build: inductor's caches off (`fresh_compiles`), its in-memory code cache emptied before each build
(`private_kernels`), and a code object of its own per build so dynamo compiles it again (`compile_build`).
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable
from typing import Any

import torch

from cuda_agent.judge.trusted.compile_modes import DEFAULT as DEFAULT_COMPILE_MODE
from cuda_agent.judge.trusted.compile_modes import check_compile_mode


def fresh_compiles() -> None:
    """Switch off the caches that would make a second torch.compile build a copy of the first (FX graph,
    AOT autograd and autotuning caches): every build then generates and autotunes its own kernels."""
    from torch._inductor import config as inductor_config

    for name in ("fx_graph_cache", "fx_graph_remote_cache", "autotune_local_cache", "autotune_remote_cache"):
        if hasattr(inductor_config, name):
            setattr(inductor_config, name, False)
    with contextlib.suppress(ImportError, AttributeError):
        from torch._functorch import config as functorch_config

        functorch_config.enable_autograd_cache = False


def private_kernels() -> None:
    """Make the next torch.compile build load its generated kernels as new modules (see `compile_build`;
    the build compiles at its first call, which must come before another build's). Builds made before
    keep theirs (their compiled graphs hold them). A torch without these caches has nothing to empty."""
    try:  # every in-memory cache of generated code inductor keeps (Python wrappers, Triton and C++ kernels)
        from torch._inductor.utils import clear_inductor_caches

        clear_inductor_caches()
        return
    except (ImportError, AttributeError, TypeError):
        pass
    with contextlib.suppress(ImportError, AttributeError, TypeError):
        from torch._inductor.codecache import PyCodeCache

        PyCodeCache.cache_clear()


def _entry(*args: Any) -> Any:
    return model(*args)  # noqa: F821 - `model` is the global of each build's own copy (compile_build)


def compile_build(model: torch.nn.Module, build: int, mode: str = DEFAULT_COMPILE_MODE) -> Callable[..., Any]:
    """torch.compile of `model` in `mode` (one of compile_modes.COMPILE_MODES: a mode with CUDA graphs is
    refused here too, whatever the parent asked) through an entry function with a code object of its own:
    dynamo caches compiled code per code object, so each build is compiled afresh, and earlier builds
    stay valid (no torch._dynamo.reset()).

    Inductor's in-memory code cache is emptied first (`private_kernels`): it hands a build whose generated
    source matches an earlier build's the *same* module, so the builds shared their Triton kernels and each
    build's autotuning re-tuned the kernels of all. The baseline was then whatever the last build chose,
    not the fastest build (H200, 2026-12-02: builds timed 0.0707, 0.0708 and 0.0825 ms when made, the
    baseline timed 0.0824 ms with the "fastest", build 0)."""
    check_compile_mode(mode)
    private_kernels()
    code = _entry.__code__.replace(co_name=f"judge_compile_build_{build}")
    entry = types.FunctionType(code, {"model": model, "__builtins__": __builtins__}, code.co_name)
    return torch.compile(entry, mode=mode)

