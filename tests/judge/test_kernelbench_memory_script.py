"""scripts/kernelbench_memory.py on the CPU: the preparation itself needs a GPU, so here each task's child
fails, and what must hold is what the script does around it: every task gets a record with a status and a
reason, the table and the JSON are written, --only selects, and the exit code says not every task was
prepared. The GPU run (scripts/device/README.md) makes the figures in docs/kernelbench_memory.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "scripts" / "kernelbench_memory.py"
TASK = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2.0

def get_inputs():
    return [torch.randn(8, 8)]

def get_init_inputs():
    return []
"""


def test_every_task_gets_a_record_with_a_reason_and_the_exit_code_says_so(tmp_path: Path) -> None:
    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    for name in ("1_Double.py", "2_Double_again.py"):
        (level / name).write_text(TASK)
    out, doc = tmp_path / "memory.json", tmp_path / "memory.md"
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "kb"), "--levels", "1", "--only", "Double",
                           "--timeout", "120", "--json", str(out), "--markdown", str(doc)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 1, done.stderr  # no GPU here: no task was prepared
    records = json.loads(out.read_text())["tasks"]
    assert [r["task"] for r in records] == ["level1/1_Double", "level1/2_Double_again"]
    assert all(r["status"] == "error" and r["reason"] for r in records), records
    assert "| level1/1_Double | error |" in doc.read_text() and "| level1/1_Double | error |" in done.stdout
    assert "[2/2] level1/2_Double_again: error" in done.stderr
    selected = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "kb"), "--levels", "1", "--only", "again",
                               "--json", str(out)], capture_output=True, text=True, timeout=600)  # fmt: skip
    assert [r["task"] for r in json.loads(out.read_text())["tasks"]] == ["level1/2_Double_again"], selected.stderr


def test_the_estimate_reads_one_calls_sizes_from_shapes_and_plans_the_rounds(tmp_path: Path) -> None:
    """--estimate runs each task on the meta device (nothing allocated, no GPU): 1 GiB in, 1 GiB out, and on
    an 8 GB GPU a round keeping every call's inputs and output at 20% of it gets 1 call instead of 10."""
    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "1_Small.py").write_text(TASK)
    (level / "2_Large.py").write_text(TASK.replace("torch.randn(8, 8)", "torch.randn(1 << 14, 1 << 14)"))
    (level / "3_Data_dependent.py").write_text(TASK.replace("return x * 2.0", "return x * x.sum().item()"))
    out, doc = tmp_path / "estimate.json", tmp_path / "estimate.md"
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "kb"), "--levels", "1", "--estimate", "8",
                           "--json", str(out), "--markdown", str(doc)], capture_output=True, text=True, timeout=300)  # fmt: skip
    records = {r["task"]: r for r in json.loads(out.read_text())["tasks"]}
    small, large, dependent = records["level1/1_Small"], records["level1/2_Large"], records["level1/3_Data_dependent"]
    assert small["round_calls"] == 10 and small["one input set GiB"] == 0.0
    assert (large["one input set GiB"], large["one output GiB"], large["round_calls"]) == (1.0, 1.0, 1)
    assert dependent["status"] == "not estimated" and "item" in dependent["reason"]
    assert done.returncode == 1  # not every task could be estimated
    assert "| level1/2_Large | 1.0 | 1.0 | 0.0 | 1 |" in doc.read_text() and "estimated from shapes" in doc.read_text()


def test_resume_keeps_what_an_earlier_run_recorded_and_runs_only_the_rest(tmp_path: Path) -> None:
    """The whole of KernelBench takes about an hour of GPU, over several 10-minute device calls: --resume
    keeps each task already recorded (a skipped one is run again) and adds the others."""
    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    for name in ("1_First.py", "2_Second.py", "3_Third.py"):
        (level / name).write_text(TASK)
    out = tmp_path / "estimate.json"
    earlier = [{"task": "level1/1_First", "status": "estimated", "round_calls": 7, "marker": "kept"},
               {"task": "level1/2_Second", "status": "skipped", "reason": "the run's --budget of 1 s was spent"}]  # fmt: skip
    out.write_text(json.dumps({"started": "earlier", "memory_gb": None, "tasks": earlier}))
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "kb"), "--levels", "1", "--estimate", "8",
                           "--json", str(out), "--resume"], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = {r["task"]: r for r in json.loads(out.read_text())["tasks"]}
    assert list(records) == ["level1/1_First", "level1/2_Second", "level1/3_Third"]
    assert records["level1/1_First"]["marker"] == "kept", "a recorded task is not run again"
    assert records["level1/2_Second"]["status"] == "estimated" and records["level1/3_Third"]["round_calls"] == 10
    assert "resuming: 1 task(s)" in done.stderr and "[1/3]" not in done.stderr and "[3/3]" in done.stderr
    assert json.loads(out.read_text())["started"] == "earlier", "a resumed run keeps the first call's start"


def test_retry_timeouts_runs_again_only_the_tasks_cut_by_a_shorter_limit(tmp_path: Path) -> None:
    """A last pass with a longer --timeout for the slow tasks: a timeout recorded under a shorter limit is run
    again, one recorded under this limit or a longer one is kept, and without --retry-timeouts both are."""
    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    for name in ("1_Short.py", "2_Long.py"):
        (level / name).write_text(TASK)
    out = tmp_path / "estimate.json"
    (level / "3_Quick.py").write_text(TASK)
    earlier = [{"task": "level1/1_Short", "status": "timeout", "reason": "over 120 s", "seconds": 120.0},
               {"task": "level1/2_Long", "status": "timeout", "reason": "over 400 s", "seconds": 400.0},
               {"task": "level1/3_Quick", "status": "estimated", "seconds": 3.0, "marker": "kept"}]  # fmt: skip
    command = [sys.executable, str(SCRIPT), str(tmp_path / "kb"), "--levels", "1", "--estimate", "8", "--json", str(out),
               "--resume", "--timeout", "400"]  # fmt: skip
    out.write_text(json.dumps({"started": "earlier", "memory_gb": None, "tasks": earlier}))
    subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert [r["status"] for r in json.loads(out.read_text())["tasks"]] == ["timeout", "timeout", "estimated"]
    subprocess.run([*command, "--retry-timeouts", "--budget", "-1"], capture_output=True, text=True, timeout=300)
    assert json.loads(out.read_text())["tasks"] == earlier, "a retry the budget never started keeps its timeout"
    done = subprocess.run([*command, "--retry-timeouts"], capture_output=True, text=True, timeout=300)
    records = {r["task"]: r for r in json.loads(out.read_text())["tasks"]}
    assert records["level1/1_Short"]["status"] == "estimated", done.stderr
    assert records["level1/2_Long"] == earlier[1] and records["level1/3_Quick"] == earlier[2]


def _script_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("kernelbench_memory_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_task_that_fits_well_on_the_whole_gpu_is_inferred_to_fit_under_the_cap() -> None:
    """The capped pass re-runs only tasks that could come near the cap: the judge's memory plans only
    shrink on a smaller GPU, so a peak well below the cap on the whole GPU is one under it too."""
    script = _script_module()
    fits = script.inferred_under_cap({"status": "ok", "peak_gib": 12.5, "seconds": 9.0}, 80, 0.8)
    assert fits["status"] == "ok" and fits["inferred"] is True and "12.5 GiB" in fits["reason"]
    assert script.inferred_under_cap({"status": "ok", "peak_gib": 66.5}, 80, 0.8) is None  # 0.8 x 80 GB = 59.6 GiB
    assert script.inferred_under_cap({"status": "task_error", "peak_gib": 3.0}, 80, 0.8) is None
    assert script.inferred_under_cap(None, 80, 0.8) is None


def test_the_emulated_gpu_reports_its_own_total_and_free_memory(monkeypatch) -> None:
    """With a cap alone the judge planned for the whole H200 and only its allocator stopped at 80 GB; beside
    other tasks' children its truth blocks were sized by what they left free. The CUDA calls are the
    boundary a CPU cannot reach; stand-ins give the H200's answers."""
    import torch

    from cuda_agent.judge.trusted import reference_memory

    script = _script_module()
    fractions = []
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=0: type("P", (), {"total_memory": 150_000_000_000})())
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction", lambda f, device=None: fractions.append(f))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (140_000_000_000, 150_000_000_000))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 30_000_000_000)
    monkeypatch.setattr(reference_memory, "gpu_total_bytes", reference_memory.gpu_total_bytes)
    real_free = torch.cuda.mem_get_info
    assert script.see_gpu(80, beside_others=False) == 80_000_000_000
    assert fractions == [80 / 150]
    # 80 GB less the 30 held here and a CUDA context's share, as an H100 alone reports it
    assert torch.cuda.mem_get_info() == (50_000_000_000 - script.CONTEXT_BYTES, 80_000_000_000)
    assert reference_memory.gpu_total_bytes() == 80_000_000_000
    # Beside other tasks' children, which hold 100 of the GPU's 150 GB: free memory as this one alone
    # would find it, so its plans are the ones it makes alone.
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (20_000_000_000, 150_000_000_000))
    assert script.see_gpu(None, beside_others=True) == 150_000_000_000
    assert torch.cuda.mem_get_info() == (150_000_000_000 - 30_000_000_000 - script.CONTEXT_BYTES, 150_000_000_000)
    monkeypatch.setattr(torch.cuda, "mem_get_info", real_free)
    assert script.see_gpu(None, beside_others=False) == 150_000_000_000 and torch.cuda.mem_get_info is real_free


def test_small_tasks_run_several_at_once_and_the_capped_pass_skips_what_fits(tmp_path: Path) -> None:
    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    for name in ("1_First.py", "2_Second.py", "3_Third.py"):
        (level / name).write_text(TASK)
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps({"started": "then", "memory_gb": None, "tasks": [
        {"task": "level1/1_First", "status": "ok", "peak_gib": 1.5}, {"task": "level1/2_Second", "status": "ok", "peak_gib": 70.0}]}))  # fmt: skip
    out = tmp_path / "capped.json"
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "kb"), "--levels", "1", "--memory-gb", "80",
                           "--whole-gpu", str(whole), "--jobs", "2", "--timeout", "120", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    records = {r["task"]: r for r in json.loads(out.read_text())["tasks"]}
    assert list(records) == ["level1/1_First", "level1/2_Second", "level1/3_Third"], done.stderr
    assert records["level1/1_First"]["inferred"] is True and records["level1/1_First"]["status"] == "ok"
    assert records["level1/2_Second"]["status"] == "error"  # near the cap: run (and, with no GPU here, failed)
    assert records["level1/3_Third"]["status"] == "error"  # not in the whole-GPU run: run
    # Each failed beside the other and was run again alone, its record saying so (run_tasks' again_alone).
    assert all(records[t]["beside_others"].startswith("error: ") for t in ("level1/2_Second", "level1/3_Third"))
    assert "2 of 2 task(s) small enough to run 2 at once" in done.stderr


def test_the_table_says_what_a_judgment_of_each_task_ends_with() -> None:
    """The preparation's record decides more than memory: a task whose reference ignores an input is a
    task_error at every judgment, and one without a float64 truth caps every kernel at reward 1. The
    table's summary and its columns say so, so that the doc shows which tasks are not judged in full."""
    module = _script_module()
    records = [
        {"task": "a/ok", "status": "ok", "peak_gib": 3.0, "precision": "float64 (promoted), on blocks of 64 rows of the batch"},
        {"task": "a/ignores", "status": "ok", "peak_gib": 1.0, "precision": "float64 (promoted)",
         "input_problem": "the reference's output does not depend on input 0"},
        {"task": "a/no_truth", "status": "ok", "peak_gib": 9.0, "precision": "none: Untrackable: ..."},
        {"task": "a/too_big", "status": "task_error", "reason": "needs 300 GiB, the GPU has 141"},
        {"task": "a/slow", "status": "timeout", "reason": "over 120 s", "seconds": 120.0},
        {"task": "a/later", "status": "skipped", "reason": "budget"},
        {"task": "a/zeros", "status": "ok", "peak_gib": 0.5, "precision": "float64 (promoted)", "degenerate": ["zeros"]},
        {"task": "a/counter", "status": "task_error", "reason": "output changed", "stateful": "output changed"},
    ]  # fmt: skip
    assert [module.judged_as(r) for r in records] == [
        "judged", "task_error: task ignores an input", "reward capped at 1: no float64 truth",
        "task_error: does not fit", "not known (timeout in the sweep)", "", "task_error: degenerate task",
        "task_error: task keeps state between calls"]  # fmt: skip
    assert module.truth_of(records[0]) == "blocks of 64 rows" and module.truth_of(records[3]) == ""
    lines = module.summary(records)
    assert "- 8 tasks: 4 ok, 2 task_error, 1 timeout, 1 skipped" in lines
    assert "- task_error: degenerate task: a/zeros" in lines and "- task_error: does not fit: a/too_big" in lines
    assert "- task_error: task ignores an input: a/ignores" in lines
    assert "- reward capped at 1: no float64 truth: a/no_truth" in lines
    assert "- past their time limit (no peak): a/slow" in lines
    assert lines[2] == "- largest peaks: a/no_truth 9.0 GiB, a/ok 3.0 GiB, a/ignores 1.0 GiB, a/zeros 0.5 GiB"
    row = next(r for r in module.table(records) if r.startswith("| a/ignores |"))
    assert "| whole batch | task_error: task ignores an input |" in row


def test_the_plot_of_peaks_is_written_with_every_measured_task(tmp_path: Path) -> None:
    """--plot: a PNG of each measured task's peak against the pass's GPU and an H100's and H200's memory
    (skipped tasks have no peak and are left out)."""
    pytest.importorskip("matplotlib")
    module = _script_module()
    records = [{"task": f"level{1 + i % 3}/{i}_T", "status": "ok", "peak_gib": float(i), "gpu_gib": 79.2,
                "precision": "float64 (promoted)"} for i in range(12)]  # fmt: skip
    records.append({"task": "level1/99_Later", "status": "skipped"})
    path = module.plot_peaks(records, tmp_path / "peaks.png", "test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
