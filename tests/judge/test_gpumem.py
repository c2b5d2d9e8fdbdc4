"""trusted/gpumem.py reads NVML by pid: a process's own GPU memory (the verification's memory check) and what
killed candidates still hold beside their GPU's free memory (the pool's `retirement_fits`). NVML is absent on
this machine, so a stand-in with NVML's calls and two GPUs answers; the functions' own logic is real."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cuda_agent.judge.trusted import gpumem

GIB = 1 << 30


class TwoGpus:
    """NVML's calls the module makes: GPU 0 runs pids 10 (3 GiB) and 11 (1 GiB), GPU 1 runs pid 10 again
    (2 GiB) and pid 12 (no figure: NVML gives None without the right to see it)."""

    def __init__(self) -> None:
        self.procs = {0: [(10, 3 * GIB), (11, GIB)], 1: [(10, 2 * GIB), (12, None)]}
        self.free = {0: 40 * GIB, 1: 25 * GIB}

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list:
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in self.procs[handle]]

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        return SimpleNamespace(free=self.free[handle])


@pytest.fixture
def nvml(monkeypatch: pytest.MonkeyPatch) -> TwoGpus:
    fake = TwoGpus()
    monkeypatch.setattr(gpumem, "_nvml", lambda: fake)
    return fake


def test_a_process_is_charged_with_its_memory_on_every_gpu(nvml: TwoGpus) -> None:
    assert gpumem.process_gpu_bytes(10) == 5 * GIB
    assert gpumem.process_gpu_bytes(12) == 0, "listed without a figure: seen, nothing counted"
    assert gpumem.process_gpu_bytes(99) is None, "not listed: NVML cannot tell"


def test_what_dying_workers_hold_is_set_against_the_least_free_of_their_gpus(nvml: TwoGpus) -> None:
    assert gpumem.gpu_bytes_and_free([10, 11]) == (6 * GIB, 25 * GIB)
    assert gpumem.gpu_bytes_and_free([11]) == (GIB, 40 * GIB)
    assert gpumem.gpu_bytes_and_free([99]) == (0, 0), "gone from every GPU: nothing of theirs is left"


def test_without_nvml_nothing_is_claimed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpumem, "_nvml", lambda: None)
    assert gpumem.process_gpu_bytes(10) is None and gpumem.gpu_bytes_and_free([10]) is None
