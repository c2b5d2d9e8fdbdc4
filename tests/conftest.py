"""Shared pytest setup: tests marked `gpu` are skipped unless a CUDA GPU is visible; `warm_root`, the
episodes' shared cache layer warmed once per test run (agent episodes take it as their cache seed, eval and
service servers read it), and `judge_cache`, a judge cache with the PCH compiled, for tests that build
through the judge itself."""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import signal
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


WARM_ROOT_NAME = "shared-cache"


def _run_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder one test run's processes share (the controller's temporary root): under pytest-xdist each
    worker's own lies inside it."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") is not None else base


JUDGE_CACHE_NAME = "judge-cache"


def _warmed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's shared folder with both caches warm (see `judge_cache` and `warm_root`)."""
    from cuda_agent.judge.trusted.cache import warm_shared

    shared = _run_temp(tmp_path_factory)
    done = shared / f"{WARM_ROOT_NAME}.done"
    with open(shared / f"{WARM_ROOT_NAME}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # Warmed once per run, not once per process: a second `warm_shared` compiles nothing but touches
        # the sealed entries it finds (their LRU time), and a test in the other process that checks an
        # episode's build leaves the shared root untouched saw those touches (2026-12-07).
        if not done.exists():
            warmed = warm_shared(shared / WARM_ROOT_NAME, arch="9.0", share_with=shared / JUDGE_CACHE_NAME / "objects")
            assert warmed.ok and warmed.pch, warmed.message
            done.touch()
    return shared


@pytest.fixture(scope="session")
def warm_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shared cache root warmed like `cuda-agent cache warm` does: the judge's PCH and binding.cpp
    object, sealed read-only: what episodes and their `utils/` commands read (`$CUDA_AGENT_SHARED_CACHE`).
    Built once per test run, about a minute on two cores: the first process that needs it warms it under a
    lock and the other test processes then find it warm (`warm_shared` is idempotent: a second call
    compiles nothing). Its PCH is a hard link of `judge_cache`'s, as the machine's shared root's is of the
    judge's own. Both are removed when the run ends (`pytest_sessionfinish`; pytest would keep the last
    three runs' temporary folders)."""
    return _warmed(tmp_path_factory) / WARM_ROOT_NAME


@pytest.fixture(scope="session")
def judge_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A judge cache root (what `$CUDA_AGENT_CACHE` names) holding the judge's PCH, shared by the run's
    tests that build through the judge itself (`cuda-agent judge --build-only`, a service's builds). A
    judge never reads `$CUDA_AGENT_SHARED_CACHE` (its verdicts trust no layer an episode could write), so
    each of these tests compiled the PCH into a cache of its own: four 20-40 s compiles of a core in CI
    (2026-12-07). Tests about the cache itself keep their own."""
    return _warmed(tmp_path_factory) / JUDGE_CACHE_NAME


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run's controller removes the warm root (under pytest-xdist its workers shared it, and a worker
    cannot know whether another still reads it; in one process the process is the controller)."""
    if hasattr(session.config, "workerinput") or not hasattr(session.config, "_tmp_path_factory"):
        return
    base = session.config._tmp_path_factory.getbasetemp()
    for name in (WARM_ROOT_NAME, JUDGE_CACHE_NAME):
        shutil.rmtree(base / name, ignore_errors=True)
    (base / f"{WARM_ROOT_NAME}.done").unlink(missing_ok=True)
