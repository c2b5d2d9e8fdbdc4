"""The worker pool on a GPU whose memory another process holds: a spare worker warmed then cannot create its
CUDA context. In the suite on an H100 (2026-12-07) a spare reference worker warmed while `examples/gpu_oom`
(raw cudaMalloc until the driver refuses) held the memory, and the next judgment, of an honest kernel, got
-1 for it. The pool now starts such a worker again once the memory is back (`WorkerPool._warmed_or_again`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cuda_agent.judge.trusted.pool import WorkerPool

pytestmark = pytest.mark.gpu

# Takes every byte it can, in shrinking chunks (the last ones small enough that no CUDA context fits
# beside them), says how much is left, and holds it until killed.
HOG = """
import sys, torch
torch.cuda.init()
held = []
for size in (1 << 30, 1 << 26, 1 << 20):
    while True:
        try:
            held.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            break
print(torch.cuda.mem_get_info()[0], flush=True)
sys.stdin.read()
"""


def _hog() -> subprocess.Popen:
    hog = subprocess.Popen([sys.executable, "-c", HOG], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert hog.stdout is not None
    free = int(hog.stdout.readline())
    assert free < 256 << 20, f"the hog left {free} bytes free"
    return hog


@pytest.mark.parametrize("kind", ["reference", "candidate"])
def test_a_worker_that_could_not_warm_beside_a_memory_hog_is_started_again_once_it_is_gone(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(tmp_path / "machine"))
    pool = WorkerPool(tmp_path, spare_candidates=0, spare_references=0, replenish=False)
    start = pool._new_reference if kind == "reference" else pool._new_candidate
    hog = _hog()
    try:
        failed = start()
        assert failed.warm_error and "out of memory" in failed.warm_error.lower(), failed.warm_error
    finally:
        hog.kill()
        hog.wait(timeout=60)
    slot = pool._warmed_or_again(failed, start)
    try:
        assert slot.warm_error is None and slot.worker.pid != failed.worker.pid
        assert failed.worker.process.poll() is not None
        assert [retry["again"] for retry in pool.warm_retries] == [True]
    finally:
        if kind == "candidate":
            pool.retire(slot)
        else:
            slot.close()
        pool.close()
