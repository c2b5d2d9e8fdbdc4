"""Shared pytest setup: tests marked `gpu` are skipped unless a CUDA GPU is visible."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU (no CUDA GPU is visible here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
