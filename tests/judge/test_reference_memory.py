"""The reference's memory plan on the CPU (issue 29 item 1): what a set keeps, when all sets' outputs are
kept, the one line a task that does not fit gets, and that a comparison with nothing kept makes its set's
output again from the seed. The preparation itself runs on a GPU (tests/gpu/test_judge_gpu.py judges the
examples with nothing kept and expects the same verdicts)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from cuda_agent.judge.trusted import reference_memory
from cuda_agent.judge.trusted.reference_worker import ReferenceWorker
from cuda_agent.judge.trusted.truth import Truth

GIB = 1 << 30


def test_a_set_keeps_its_outputs_and_their_truths_value_and_error() -> None:
    outputs = [torch.zeros(1000), torch.zeros(10, dtype=torch.float64)]
    truths = [Truth(torch.zeros(1000, dtype=torch.float64), torch.zeros(1000), torch.float32), None]
    assert reference_memory.kept_bytes(outputs, None) == 4000 + 80
    assert reference_memory.kept_bytes(outputs, truths) == 4000 + 80 + 8000 + 4000
    exact_only = [Truth(torch.zeros(1000, dtype=torch.float64), None, torch.float32)]
    assert reference_memory.kept_bytes(outputs[:1], exact_only) == 4000 + 8000


def test_every_sets_outputs_are_kept_only_within_the_share_of_the_gpu() -> None:
    h200 = 141 * GIB
    assert reference_memory.keeps_every_set(2 * GIB, 5, 0.10, h200)  # 10 GiB of 14.1
    assert not reference_memory.keeps_every_set(3 * GIB, 5, 0.10, h200)  # 15 GiB
    assert not reference_memory.keeps_every_set(3 * GIB, 5, 0.10, 80 * GIB)
    assert not reference_memory.keeps_every_set(1, 5, 0.0, h200)  # share 0: nothing is ever kept
    assert reference_memory.keeps_every_set(0, 5, 0.0, h200)


def test_a_task_that_does_not_fit_says_what_it_needed_and_what_the_gpu_has() -> None:
    exc = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 12.00 GiB.\nmore detail")
    line = reference_memory.shortage(exc, {"one input set": 6 * GIB, "its outputs": 6 * GIB}, (2 * GIB, 140 * GIB))
    assert "one input set 6.00 GiB, its outputs 6.00 GiB" in line
    assert "the GPU has 140.0 GiB, 2.0 GiB of it free" in line
    assert line.endswith("torch: CUDA out of memory. Tried to allocate 12.00 GiB.") and "\n" not in line
    assert "sizes not yet known" in reference_memory.shortage(exc, {}, (0, 80 * GIB))


def test_running_out_of_memory_in_the_preparation_becomes_that_line(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = ReferenceWorker()

    def runs_out(*args: Any, **kw: Any) -> dict[str, Any]:
        worker.sizes["one input set"] = 6 * GIB
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 12.00 GiB")

    monkeypatch.setattr(worker, "_prepare", runs_out)
    monkeypatch.setattr(worker, "end_judgment", lambda: {})  # no CUDA here to free
    with pytest.raises(reference_memory.TaskDoesNotFit, match=r"one input set 6\.00 GiB.*Tried to allocate 12"):
        worker.prepare("task.py", "/tmp", 1, [2], 3, 1e-2, 1e-2)
    # Any other failure is not made into a memory line.
    monkeypatch.setattr(worker, "_prepare", lambda *a, **k: (_ for _ in ()).throw(ValueError("no tensors")))
    with pytest.raises(ValueError, match="no tensors"):
        worker.prepare("task.py", "/tmp", 1, [2], 3, 1e-2, 1e-2)


def test_a_set_whose_outputs_were_not_kept_is_compared_by_making_them_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A comparison of a set kept in memory reads the kept outputs; one too large to keep goes the way of a
    timed call's spot check: the reference's output for the set's seed, made now (compare_timing)."""
    worker = ReferenceWorker()
    worker.input_seeds = [11, 22]
    worker.outputs = [[torch.zeros(3)], None]
    worker.exact_outputs, worker.cut_alternatives, worker.aliases = [None, None], [None, None], [[[]], [[]]]
    remade: list[tuple[int, str]] = []
    monkeypatch.setattr(worker, "compare_timing",
                        lambda seed, path, *a, **k: remade.append((seed, path)) or {"match": True})  # fmt: skip
    read: list[list[torch.Tensor]] = []
    monkeypatch.setattr(worker, "_compare_file", lambda expected, *a, **k: read.append(expected) or {"match": True})
    worker.compare(0, "set0.tensors", 1e-2, 1e-2)
    worker.compare(1, "set1.tensors", 1e-2, 1e-2, precision_k=2.0)
    assert len(read) == 1 and torch.equal(read[0][0], torch.zeros(3))
    assert remade == [(22, "set1.tensors")]


class _OutOfMemorySampler:
    """A baseline sampler whose round runs out of GPU memory (what a 16 GiB-a-call task did at ten calls)."""

    def __init__(self) -> None:
        self.released = 0

    def release(self) -> None:
        self.released += 1

    def round(self, samples: int, **kw: object) -> None:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 GiB.")


def test_a_baseline_round_that_runs_out_of_memory_is_one_line_with_the_tasks_sizes(cpu_reference, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (3 * GIB, 140 * GIB))
    eager = _OutOfMemorySampler()
    cpu_reference.samplers = {"eager": eager}
    cpu_reference.sizes = {"one input set": 8 * GIB, "its outputs": 8 * GIB}
    with pytest.raises(reference_memory.TaskDoesNotFit) as raised:
        cpu_reference.time_round("eager", 1)
    line = str(raised.value)
    assert "one input set 8.00 GiB, its outputs 8.00 GiB" in line and "a timed round's inputs and outputs" in line
    assert "140.0 GiB" in line and "Tried to allocate 16.00 GiB" in line and "\n" not in line
    assert eager.released >= 2  # before the round, and before the line reads what is free
