"""Inputs drawn from seeds (judge/inputs.py): two processes given one seed must draw the same bytes, or
the candidate worker's inputs would not be the reference's; the fingerprint must tell when they are not."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from cuda_agent.judge.candidate.inputs import draw_inputs, fingerprint
from cuda_agent.task import Task, import_task_module

SEEDED_TASK = """
import random
import numpy as np
import torch

def get_inputs():
    x = torch.randn(64, 33)
    idx = torch.randint(0, 33, (64,))
    scale = random.random()
    noise = torch.from_numpy(np.random.standard_normal((8, 8)).astype("float32"))
    return [x, idx, scale, noise, 7]
"""

CLOCKED_TASK = """
import time
import torch

def get_inputs():
    return [torch.randn(16, 16) + float(time.perf_counter_ns() % 997)]
"""


def _module(tmp_path: Path, source: str):
    path = tmp_path / "model.py"
    path.write_text(source)
    return import_task_module(Task(name="model", source=source, path=path))


def _print_in_fresh_process(tmp_path: Path, source: str, seed: int) -> str:
    (tmp_path / "model.py").write_text(source)
    code = textwrap.dedent(f"""
        import torch
        torch.randn(1000)  # generator state used before: the draw must not depend on it
        from pathlib import Path
        from cuda_agent.judge.candidate.inputs import draw_inputs, fingerprint
        from cuda_agent.task import Task, import_task_module
        path = Path({str(tmp_path / "model.py")!r})
        module = import_task_module(Task(name="model", source=path.read_text(), path=path))
        print(fingerprint(draw_inputs(module, {seed}, device="cpu")))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_one_seed_draws_the_same_inputs_in_two_processes(tmp_path: Path) -> None:
    here = fingerprint(draw_inputs(_module(tmp_path, SEEDED_TASK), 1234, device="cpu"))
    there = _print_in_fresh_process(tmp_path, SEEDED_TASK, 1234)
    assert here == there
    other = _print_in_fresh_process(tmp_path, SEEDED_TASK, 1235)
    assert other != here


def test_a_task_reading_a_clock_is_told_apart(tmp_path: Path) -> None:
    module = _module(tmp_path, CLOCKED_TASK)
    prints = {fingerprint(draw_inputs(module, 99, device="cpu")) for _ in range(3)}
    assert len(prints) > 1


def test_fingerprint_sees_values_layout_dtype_and_plain_items() -> None:
    x = torch.randn(40, 30)
    base = fingerprint([x, 3])
    assert fingerprint([x.clone(), 3]) == base
    changed = x.clone()
    changed[17, 4] = torch.nextafter(changed[17, 4], torch.tensor(float("inf")))
    assert fingerprint([changed, 3]) != base  # one ulp of one element
    assert fingerprint([x, 4]) != base
    assert fingerprint([x.t(), 3]) != fingerprint([x.t().contiguous(), 3])  # same values, other strides
    assert fingerprint([x.double(), 3]) != base
    swapped = x.clone()
    swapped[[0, 39]] = swapped[[39, 0]]  # same multiset of bytes, other positions
    assert fingerprint([swapped, 3]) != base
    assert fingerprint([torch.zeros(0), torch.zeros(3, dtype=torch.bool)]) == fingerprint(
        [torch.zeros(0), torch.zeros(3, dtype=torch.bool)]
    )
