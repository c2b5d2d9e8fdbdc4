"""benchmarks/train_long_context.py on the CPU (`--scale cpu`): the real SFT and value stages, each in a
child process, on a shrunk Qwen3 built from the published configuration's fields and a tokenizer with
Qwen3's chat template; every run trains, reports tokens/s and its loss curve, the probe reports the
longest context, and the JSON, the table and the plot are written. The H200 figures come from the same
script at `--scale gpu` (scripts/device/train_long_context.sh)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_long_context_benchmark_trains_both_stages_and_reports_them(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "train_long_context.py"), "--scale", "cpu", "--models",
         "qwen3-0.6b", "--steps", "2", "--out", str(out), "--work", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "train_long_context.json").read_text())
    assert report["models"]["qwen3-0.6b"]["config"]["num_hidden_layers"] == 2  # shrunk, same fields
    assert report["data"]["4096"]["tokens_min"] >= 4096
    runs = {r["stage"]: r for r in report["runs"]}
    assert set(runs) == {"sft", "value"}
    for run in runs.values():
        assert run["fits"] is True and run["tokens_per_s"] > 0 and len(run["loss_curve"]) == 2
    assert report["longest"]["qwen3-0.6b/sft"]["fits"] == 6144 and report["longest"]["qwen3-0.6b/value"]["fits"] == 6144
    assert (out / "train_long_context_loss.png").stat().st_size > 0
    assert "tokens/s" in done.stdout and "all runs trained" in done.stderr
