"""Fixtures shared by the judge tests (the warmed shared cache, `warm_root`, lives in tests/conftest.py: the
eval and service tests' servers read it too)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture
def cpu_pool_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., object]]:
    """WorkerPools with real worker processes whose GPU warm-up is skipped (this machine has no GPU), in
    this test's own cache and machine folders; closed after the test."""
    from cuda_agent.judge.common.channel import WorkerHandle
    from cuda_agent.judge.trusted.pool import WorkerPool

    def warm_without_gpu(self: WorkerPool, worker: WorkerHandle, times: object = None) -> str | None:
        reply = worker.call("warm", 120, gpu=False)
        return None if reply.get("ok") else str(reply)

    monkeypatch.setattr(WorkerPool, "_warm", warm_without_gpu)
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(tmp_path / "machine"))
    made: list[WorkerPool] = []

    def make(**kwargs: object) -> WorkerPool:
        pool = WorkerPool(tmp_path, **kwargs)  # type: ignore[arg-type]
        pool.start()
        made.append(pool)
        return pool

    yield make
    for pool in made:
        pool.close()


@pytest.fixture
def candidate_process() -> Iterator[subprocess.Popen]:
    """A real process standing in for the candidate worker (its own session, like the pool's)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def cpu_reference(monkeypatch: pytest.MonkeyPatch) -> object:
    """A ReferenceWorker whose few CUDA calls run on the CPU (this machine has no GPU): the model stays where
    it is, draws (the reference's and the candidate worker's) and tensor files use the CPU, synchronising
    and freeing the cache do nothing. Its `prepare` and comparisons are then the judge's own code."""
    import torch

    from cuda_agent.judge.candidate import inputs as inputs_module
    from cuda_agent.judge.candidate import worker as candidate_worker
    from cuda_agent.judge.common import tensorfile
    from cuda_agent.judge.trusted import reference_worker

    draw, load = inputs_module.draw_inputs, tensorfile.load
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda *a, **k: None)
    for module in (reference_worker, candidate_worker):
        monkeypatch.setattr(module, "draw_inputs",
                            lambda task, seed, device="cpu", transforms=None, signs=None, outliers=None: (
                                draw(task, seed, "cpu", transforms, signs, outliers)))  # fmt: skip
    monkeypatch.setattr(reference_worker.tensorfile, "load", lambda path, device="cuda", trusted=True, max_bytes=None: (
        load(path, "cpu", trusted, max_bytes)))  # fmt: skip
    return reference_worker.ReferenceWorker()


@pytest.fixture
def candidate_holds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """NVML names the (scripted) candidate worker and it holds no GPU memory between calls: the memory check
    at rest (decide/verify_stage.py `check_memory_at_rest`) passes, for tests about other rules."""
    from cuda_agent.judge.decide import verify_stage

    monkeypatch.setattr(verify_stage, "process_gpu_bytes", lambda pid: 0)
