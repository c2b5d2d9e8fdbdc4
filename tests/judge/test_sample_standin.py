"""The reference on every second index of a global input, as a degeneracy stand-in (sample_standin.py).

A mean over many rows of a bounded per-row term, whose rows are nearly alike on every draw, can be read from
a sample inside the precision audit's bound: the task cannot tell such a kernel from an honest one and is
degenerate. Where the rows differ enough, the sample fails the audit and the task is judged as before.
Runs the judge's own reference worker on the CPU (conftest.py `cpu_reference`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from cuda_agent.judge.trusted import sample_standin
from cuda_agent.judge.trusted.compare import Tolerance

# Cosine-similarity losses over 1024 x 1024 inputs: 2^20 input elements per output, so the outlier audit
# qualifies both inputs, and no few elements move a mean of bounded terms, so it leaves them without outliers.
COSINE_TASK = """
import torch
class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.REDUCE(1 - torch.nn.functional.cosine_similarity(a, b, dim=1))
def get_inputs():
    a = torch.randn(1024, 1024)
    sign = 1.0 if float(torch.rand(())) < 0.5 else -1.0
    return [a, sign * a + NOISE * torch.randn(1024, 1024)]
def get_init_inputs():
    return []
"""
SAMPLE = "the reference run on every 2nd index"
# Draws anti-parallel, parallel, anti-parallel: the loss near 2, 0, 2, so no constant passes, and the outlier
# audit (on the first draw) finds that no few elements move a mean near 2 by 1/64.
SEEDS = [15, 11, 16]


def _task(reduce: str, noise: float) -> str:
    return COSINE_TASK.replace("REDUCE", reduce).replace("NOISE", repr(noise))


def _prepare(worker: Any, tmp_path: Path, source: str) -> dict[str, Any]:
    task = tmp_path / "model.py"
    task.write_text(source)
    return worker.prepare(str(task), str(tmp_path), 1, SEEDS, 14, 1e-2, 1e-2)


def test_nearly_parallel_rows_make_a_sampled_mean_degenerate(cpu_reference: Any, tmp_path: Path) -> None:
    """Rows within 1% of (anti-)parallel: every row's term is the same to ~1e-4, so half of the rows (or of
    the columns) give the mean inside the precision audit's bound on every set: task_error, where before
    no stand-in passed (the loss is near 2 on some draws and near 0 on others)."""
    reply = _prepare(cpu_reference, tmp_path, _task("mean", 0.01))
    assert reply["outlier_audit"]["refused"], "the premise: no outliers for a mean of bounded terms"
    found = [d for d in reply["degenerate"] if d.startswith(SAMPLE)]
    assert found, reply["degenerate"]
    assert any("dim 0 of input 0" in d for d in found), found
    assert not [d for d in reply["degenerate"] if not d.startswith(SAMPLE)], "only the sample passes"


def test_a_sampled_sum_is_caught_scaled(cpu_reference: Any, tmp_path: Path) -> None:
    """A sum over the rows: half of them, doubled, is the stand-in."""
    reply = _prepare(cpu_reference, tmp_path, _task("sum", 0.01))
    assert any(d.startswith(SAMPLE) and "times 2" in d for d in reply["degenerate"]), reply["degenerate"]


def test_rows_that_differ_keep_the_task(cpu_reference: Any, tmp_path: Path) -> None:
    """Noise as large as the signal: the rows' terms differ, a half sample misses the mean by tens of times
    the honest allowance, and the task is judged (no stand-in passes)."""
    reply = _prepare(cpu_reference, tmp_path, _task("mean", 1.0))
    assert reply["outlier_audit"]["refused"]
    assert reply["degenerate"] == [], reply["degenerate"]


def test_without_the_truth_the_tolerance_alone_decides(cpu_reference: Any, tmp_path: Path) -> None:
    """With the precision audit off the judge compares by the tolerance only, and so does the stand-in: the
    differing rows' half sample is then within 1e-2 and the task is degenerate under that configuration."""
    task = tmp_path / "model.py"
    task.write_text(_task("mean", 1.0))
    reply = cpu_reference.prepare(str(task), str(tmp_path), 1, SEEDS, 14, 1e-2, 1e-2, precision_audit=False)
    assert any(d.startswith(SAMPLE) for d in reply["degenerate"]), reply["degenerate"]


def test_sampled_inputs_follow_broadcasting() -> None:
    """The sampled dimension is cut in every input aligned with it from the right and of the same size;
    others are copied whole."""
    x, w, other, k = torch.randn(6, 5), torch.randn(5), torch.randn(3), 7
    by_col = sample_standin.sampled_inputs([x, w, other, k], sample_standin.Sampling(0, 1))
    assert by_col[0].shape == (6, 3) and torch.equal(by_col[0], x[:, ::2])
    assert torch.equal(by_col[1], w[::2]) and torch.equal(by_col[2], other) and by_col[3] == 7
    by_row = sample_standin.sampled_inputs([x, w], sample_standin.Sampling(0, 0))
    assert torch.equal(by_row[0], x[::2]) and torch.equal(by_row[1], w)
    assert by_row[1] is not w, "a copy: the forward may update its inputs"
    # two inputs of one shape cut alike are one sample; a dimension of size 1 is none
    assert sample_standin.samplings([x, x.clone()], [0, 1]) == [
        sample_standin.Sampling(0, 0),
        sample_standin.Sampling(0, 1),
    ]
    assert sample_standin.samplings([x, torch.randn(1, 4)], [0, 1]) == [
        sample_standin.Sampling(0, 0),
        sample_standin.Sampling(0, 1),
        sample_standin.Sampling(1, 1),
    ]


@pytest.mark.parametrize("reduce", ["mean", "sum"])
def test_passing_refuses_an_output_of_another_shape(reduce: str) -> None:
    """A forward whose output keeps the sampled dimension (row-wise results) has no stand-in."""
    model = torch.nn.Module()
    model.forward = lambda a: getattr(torch, reduce)(a, dim=1)  # type: ignore[method-assign]
    a = torch.randn(64, 8)
    out = [model(a)]
    found = sample_standin.passing(model, [a], out, None, Tolerance(1e-2, 1e-2), 3.0,
                                   [sample_standin.Sampling(0, 0)])  # fmt: skip
    assert found == []


def test_the_kernelbench_audit_runs_the_same_stand_in() -> None:
    """degeneracy.audit_task (scripts/kernelbench_degeneracy.py) makes the truth the judge would and finds
    the same sample passing: the docs' list of degenerate tasks follows the judge."""
    from cuda_agent.judge.trusted.degeneracy import audit_task
    from cuda_agent.task import Task, import_task_module

    module = import_task_module(Task(name="cosine", source=_task("mean", 0.01)), "sample_standin_cosine")
    found = audit_task(module, "cosine", SEEDS, Tolerance(1e-2, 1e-2), device="cpu")
    assert found.degenerate and all(d.startswith(SAMPLE) for d in found.degenerate), found.degenerate
    assert len(found.degenerate) == 2, "rows and columns, each once for both inputs"
