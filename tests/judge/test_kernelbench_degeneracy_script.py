"""scripts/kernelbench_degeneracy.py on a small folder laid out like KernelBench, on the CPU: every task is
audited in a child of its own, a degenerate task is flagged with why, the others are not, a task over the
size limit is skipped, and the records and the markdown are written (no network, no GPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "scripts" / "kernelbench_degeneracy.py"

TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return {body}

def get_inputs():
    return [torch.randn({shape})]

def get_init_inputs():
    return []
"""


def _bench(root: Path) -> Path:
    level = root / "KernelBench" / "level1"
    level.mkdir(parents=True)
    tasks = {
        "1_Tiny_gelu.py": ("torch.nn.functional.gelu(x) * 1e-4", "64, 256"),  # zeros pass: degenerate
        "2_Relu_in_place.py": ("x.relu_()", "64, 256"),  # input as drawn is not the output
        "3_Abs_max_norm.py": ("x / x.abs().max()", "1 << 16"),  # one polynomial fails other sets
        "4_Sigmoid_mask.py": ("torch.sigmoid(x) > 0.5", "64, 256"),
        "5_Too_big.py": ("x * 2.0", "4096, 4096"),  # 128 MB of outputs and inputs: over --max-mb 32
    }
    for name, (body, shape) in tasks.items():
        (level / name).write_text(TASK.format(body=body, shape=shape))
    return root


def _audit(bench: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    """The script on the CPU over `bench`'s level 1, records to `out`."""
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(bench), "--levels", "1", "--device", "cpu", "--max-mb", "32",
         "--timeout", "120", "--json", str(out), *extra],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_the_script_flags_the_degenerate_task_only(tmp_path: Path) -> None:
    bench = _bench(tmp_path / "kb")
    out, doc = tmp_path / "records.json", tmp_path / "degeneracy.md"
    done = _audit(bench, out, "--jobs", "2", "--markdown", str(doc))
    assert done.returncode == 0, done.stderr
    records = {r["task"]: r for r in json.loads(out.read_text())["tasks"]}
    assert sorted(records) == list(records)  # in task order, though four small ones ran two at a time
    assert "5 of 5 task(s) under 512 MB: 2 at once" in done.stderr
    assert records["level1/1_Tiny_gelu"]["status"] == "degenerate"
    assert "all zeros" in records["level1/1_Tiny_gelu"]["degenerate"]
    for task in ("level1/2_Relu_in_place", "level1/3_Abs_max_norm", "level1/4_Sigmoid_mask"):
        assert records[task]["status"] == "ok", records[task]
    assert records["level1/5_Too_big"]["status"] == "skipped"
    text = doc.read_text()
    (line,) = [x for x in text.splitlines() if x.startswith("| level1/1_Tiny_gelu |")]
    assert "all zeros" in line and "|y| <=" in line and "device **cpu**" in text
    assert "level1/5_Too_big | skipped" in text
    assert "[1/5]" in done.stderr  # progress
    merged = tmp_path / "merged.json"
    code = subprocess.run([sys.executable, str(SCRIPT), "--merge", str(out), "--json", str(merged)], timeout=120).returncode
    assert code == 0 and len(json.loads(merged.read_text())["tasks"]) == 5


def test_a_resumed_run_keeps_audited_records_and_audits_what_was_skipped(tmp_path: Path) -> None:
    """A GPU run cut by the device's 10-minute calls goes on with --resume: the tasks the earlier run
    audited are not run again (their records are taken as they are), the ones it skipped are audited."""
    bench = _bench(tmp_path / "kb")
    earlier = tmp_path / "earlier.json"
    kept = {"status": "ok", "degenerate": [], "task": "level1/3_Abs_max_norm", "seconds": 1.0, "planted": True}
    skipped = {"status": "skipped", "reason": "the run's --budget of 1 s was spent", "task": "level1/1_Tiny_gelu"}
    earlier.write_text(json.dumps({"device": "cpu", "started": "then", "sets": 5, "tasks": [kept, skipped]}))
    out = tmp_path / "records.json"
    done = _audit(bench, out, "--only", "_", "--resume", str(earlier))
    assert done.returncode == 0, done.stderr
    records = {r["task"]: r for r in json.loads(out.read_text())["tasks"]}
    assert records["level1/3_Abs_max_norm"].get("planted") is True  # taken, not audited again
    assert records["level1/1_Tiny_gelu"]["status"] == "degenerate"  # skipped before, audited now
    assert records["level1/2_Relu_in_place"]["status"] == "ok" and len(records) == 5


def test_a_task_that_raises_is_recorded_with_the_frames_that_raised(tmp_path: Path) -> None:
    """An error record names where it was raised (the task file's own line here), so that an audit's own
    failure (an allocation in the judge's code) can be told from the task's without a second device run."""
    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "1_Raises.py").write_text(TASK.format(body="torch.linalg.cholesky(-x @ x.T - 1.0)", shape="8, 8"))
    out = tmp_path / "records.json"
    done = _audit(tmp_path / "kb", out)
    assert done.returncode == 0, done.stderr
    (record,) = json.loads(out.read_text())["tasks"]
    assert record["status"] == "error", record
    assert any(frame.startswith("1_Raises.py:") and frame.endswith("in forward") for frame in record["where"]), record


def test_a_task_that_kills_its_process_or_hangs_costs_that_task_only(tmp_path: Path) -> None:
    """Children are forked from a server that preloaded torch: a task that ends its own process (as a
    segfault or the kernel's OOM killer would) or never returns gets a record saying so, and the task
    after it is audited as usual."""
    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "1_Exits.py").write_text(TASK.format(body="__import__('os')._exit(9)", shape="8, 8"))
    (level / "2_Hangs.py").write_text(TASK.format(body="__import__('time').sleep(600)", shape="8, 8"))
    (level / "3_Tiny_gelu.py").write_text(TASK.format(body="torch.nn.functional.gelu(x) * 1e-4", shape="64, 256"))
    out = tmp_path / "records.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "kb"), "--levels", "1", "--device", "cpu", "--timeout", "20",
         "--json", str(out)], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = {r["task"]: r for r in json.loads(out.read_text())["tasks"]}
    assert records["level1/1_Exits"]["status"] == "error"
    assert "without a result: exit 9" in records["level1/1_Exits"]["reason"]
    assert records["level1/2_Hangs"]["status"] == "timeout" and "over 20 s" in records["level1/2_Hangs"]["reason"]
    assert records["level1/3_Tiny_gelu"]["status"] == "degenerate"
