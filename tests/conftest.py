"""Shared pytest setup: tests marked `gpu` are skipped unless a CUDA GPU is visible; `warm_root`, the
judge's shared cache warmed once per session (judge tests build with it, eval and service servers read it)."""

from __future__ import annotations

import functools
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest


@functools.cache
def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_configure(config: pytest.Config) -> None:
    """A test run started in the background by a non-interactive shell (`cmd &`, as a CI wrapper may)
    inherits SIGINT ignored, and so would every CLI the Ctrl-C tests start: they would test the inherited
    disposition, not the command's handling. Python handlers reset to the default in a child at exec."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU (no CUDA GPU is visible here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session")
def warm_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A shared cache root warmed like `cuda-agent cache warm` does: the judge's PCH and binding.cpp
    object, sealed read-only. Built once per session (about a minute on two cores); its ~570 MB are
    removed when the session ends (pytest would keep the last three sessions' temporary folders)."""
    from cuda_agent.judge.trusted.cache import warm_shared

    warmed = warm_shared(tmp_path_factory.mktemp("shared-cache"), arch="9.0")
    assert warmed.ok and warmed.pch, warmed.message
    yield warmed.root
    shutil.rmtree(warmed.root, ignore_errors=True)
