"""Shared pytest setup: tests marked `gpu` are skipped unless a CUDA GPU is visible."""

from __future__ import annotations

import functools
import signal

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
