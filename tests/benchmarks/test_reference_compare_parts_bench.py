"""benchmarks/reference_compare_parts.py: its timers attribute each millisecond once (a part's time excludes
the parts inside it, the forward counts only outside the truth), and without a GPU it says so and exits 2.

No GPU here: the synchronisation is a no-op stand-in and the parts are plain functions that sleep."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.benchmark_module import load_benchmark

parts_bench = load_benchmark("reference_compare_parts")


def test_nested_parts_are_counted_once_and_the_forward_only_outside_the_truth(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    parts = parts_bench.Parts()
    forward = parts.timed("reference forward", lambda: time.sleep(0.02), outer_only=True)
    audit = parts.timed("precision audit", lambda: time.sleep(0.03))
    truth = parts.timed("truth", lambda: (forward(), time.sleep(0.01)))
    decision = parts.timed("decision, the rest", lambda: (audit(), time.sleep(0.01)))
    forward()  # outside a measured call: not counted anywhere
    with parts.call() as found:
        truth()
        forward()
        decision()
        time.sleep(0.005)
    assert found["truth"] == pytest.approx(30, abs=8), found  # its forward is the truth's own evaluation
    assert found["reference forward"] == pytest.approx(20, abs=8), found  # once: the call outside the truth
    assert found["precision audit"] == pytest.approx(30, abs=8) and found["decision, the rest"] == pytest.approx(10, abs=8)
    parts_sum = sum(v for k, v in found.items() if k not in ("total", "other"))
    assert found["total"] == pytest.approx(parts_sum + found["other"]) and found["other"] >= 0
    assert found["total"] == pytest.approx(95, abs=20), found


def test_without_a_gpu_it_measures_nothing_and_exits_2(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the benchmark would run")
    script = Path(__file__).parents[2] / "benchmarks" / "reference_compare_parts.py"
    done = subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "needs an NVIDIA GPU" in done.stdout
    assert not (tmp_path / "reference_compare_parts.json").exists()
