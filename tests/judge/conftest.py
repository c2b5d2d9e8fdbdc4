"""Fixtures shared by the judge tests."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest


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
