"""benchmarks/model_construction.py on two tasks written here, in a KernelBench-shaped folder: the chosen
tasks are those in the parameter range, both ways are timed through the worker's path (build, move, load
the state dict strictly: a layout the skipped draws changed would fail there), and the JSON says so."""

from __future__ import annotations

import json
from pathlib import Path

from tests.benchmark_module import load_benchmark

bench = load_benchmark("model_construction")

TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.linear = nn.Linear(n, n)
        self.attention = nn.MultiheadAttention(64, 4)

    def forward(self, x):
        return self.linear(x)

def get_inputs():
    return [torch.randn(2, {n})]

def get_init_inputs():
    return [{n}]
"""


def test_the_benchmark_times_both_ways_on_tasks_in_range(tmp_path: Path, capsys) -> None:
    level = tmp_path / "tasks" / "level2"
    level.mkdir(parents=True)
    (level / "1_Big.py").write_text(TASK.format(n=1024))  # about 1.07 M parameters
    (level / "2_Small.py").write_text(TASK.format(n=16))  # below --min-params
    (level / "3_Broken.py").write_text("raise ImportError('no such kernel library')\n")  # named, left out
    code = bench.main(["--tasks", str(tmp_path / "tasks"), "--min-params", "1e6", "--reps", "1",
                       "--out", str(tmp_path / "out")])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    report = json.loads((tmp_path / "out" / "model_construction.json").read_text())
    assert [r["task"] for r in report["rows"]] == ["level2/1_Big"]
    row = report["rows"][0]
    assert row["parameters"] == 1024 * 1024 + 1024 + 4 * 64 * 64 + 4 * 64
    assert row["draws_s"] > 0 and row["skipped_s"] > 0 and report["layout_mismatches"] == []
    assert report["device"] == "cpu" and report["gpu"] is None and report["uncounted"] == ["level2/3_Broken"]
    assert "1 tasks could not be built on the meta device" in printed
    assert "1 tasks with" in printed and "moved to cpu and loaded" in printed and "less per build" in printed


def test_a_folder_without_levels_is_one_line(tmp_path: Path, capsys) -> None:
    assert bench.main(["--tasks", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().out.startswith("error: no level1..3 folders")
