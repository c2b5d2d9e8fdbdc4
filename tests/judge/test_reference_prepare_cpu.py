"""The reference worker's preparation and comparisons run end to end on the CPU, with CUDA's few entry
points made the CPU's (this machine has no GPU; the GPU runs the same code in tests/gpu). It shows both of
the memory plan's ways (trusted/reference_memory.py): every set's outputs kept, or none kept and each made
again from its seed, and that a comparison gives the same answer either way, for a right and a wrong output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from cuda_agent.judge.common import tensorfile
from cuda_agent.judge.trusted import reference_worker
from cuda_agent.judge.trusted.reference_worker import ReferenceWorker

# A small softmax (examples/row_softmax's model at 1/256 of its size: the preparation's audits and float64
# truth on 2 CPU cores), inputs scaled as there so that a trivial answer fails.
TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(64, 512) * 4.0]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("kept_share", [0.10, 0.0])
def test_a_prepared_reference_compares_right_and_wrong_outputs_alike_kept_or_not(
    cpu_reference: ReferenceWorker, tmp_path: Path, kept_share: float
) -> None:
    seeds = [11, 22, 33]
    task = tmp_path / "small_softmax.py"
    task.write_text(TASK)
    reply = cpu_reference.prepare(str(task), str(tmp_path), 1, seeds, 44, 1e-2, 1e-2, kept_share=kept_share)
    assert reply["kept_sets"] == (3 if kept_share else 0)
    assert reply["reproducible"] and not reply["degenerate"] and reply["precision"].startswith("float64")
    assert [o is None for o in cpu_reference.outputs] == [kept_share == 0.0] * 3
    # one call's sizes, for the parent's round size (decide/round_size.py); no GPU memory to read here
    assert reply["input_bytes"] == reply["output_bytes"] == 64 * 512 * 4 and reply["gpu_bytes"] is None
    for index, seed in enumerate(seeds):
        with torch.no_grad():
            right = [t.clone() for t in reference_worker.flatten_tensors(cpu_reference.model(*cpu_reference._draw(seed)))]
        for produced, match in ((right, True), ([t + 0.5 for t in right], False)):
            path = tmp_path / f"out_{index}_{match}.tensors"
            tensorfile.save(produced, path)
            verdict: dict[str, Any] = cpu_reference.compare(index, str(path), 1e-2, 1e-2, aliases=[[]], precision_k=8.0)
            assert verdict["match"] is match, (kept_share, index, verdict)
