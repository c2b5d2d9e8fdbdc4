"""`cuda-agent synth` at the front door: fail-closed decontamination, early checks, exact counts, honest
summaries, Ctrl-C and --quiet. The catalog is the session's small crawl; everything else runs for real."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cuda_agent.synth.pipeline as pipeline_mod
from cuda_agent.cli import main
from cuda_agent.synth.catalog import catalog_to_json
from cuda_agent.synth.dataset import read_journal
from cuda_agent.synth.decontam import BenchmarkError, BenchmarkIndex
from cuda_agent.synth.pipeline import Pipeline, PipelineConfig, Summary

BENCH_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []
'''

# Runs `cuda-agent synth` in a subprocess with the session's catalog (the full crawl takes minutes).
DRIVER = '''import json, sys
if __name__ == "__main__":
    from cuda_agent.synth import catalog as cat, pipeline
    loaded = cat.catalog_from_json(json.load(open(sys.argv[1])))
    pipeline.load_catalog = lambda *a, **k: loaded
    from cuda_agent.cli import main
    sys.exit(main(sys.argv[2:]))
'''


@pytest.fixture
def no_crawl(monkeypatch, catalog):
    monkeypatch.setattr(pipeline_mod, "load_catalog", lambda *a, **k: catalog)


def crawl_forbidden(*args, **kwargs):
    raise AssertionError("the catalog was loaded before the arguments were checked")


def test_a_missing_or_empty_benchmark_is_an_error(monkeypatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setattr(pipeline_mod, "load_catalog", crawl_forbidden)
    args = ["synth", "--out", str(tmp_path / "out"), "--static-only", "--tasks", "2", "--quiet"]
    assert main([*args, "--benchmark", str(tmp_path / "KernelBench" / "KernelBench")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "git clone https://github.com/ScalingIntelligence/KernelBench" in err
    (tmp_path / "empty" / "level1").mkdir(parents=True)
    assert main([*args, "--benchmark", str(tmp_path / "empty")]) == 2
    assert "holds no readable task" in capsys.readouterr().err
    with pytest.raises(BenchmarkError):  # the Python API fails closed too
        BenchmarkIndex.from_dir(tmp_path / "empty")


def test_decontamination_is_chosen_never_skipped_silently(monkeypatch, catalog, tmp_path: Path, capsys) -> None:
    """Without --benchmark, synth refuses (one line saying what to pass) instead of a run that removes
    nothing; --no-decontam runs and says, at the start and in the summary, that nothing was removed."""
    args = ["synth", "--out", str(tmp_path / "out"), "--static-only", "--tasks", "2", "--quiet"]
    monkeypatch.setattr(pipeline_mod, "load_catalog", crawl_forbidden)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--benchmark KernelBench/KernelBench" in err and "--no-decontam" in err
    assert not (tmp_path / "out").exists()
    assert main([*args, "--no-decontam", "--benchmark", str(tmp_path)]) == 2
    assert "contradict" in capsys.readouterr().err
    monkeypatch.setattr(pipeline_mod, "load_catalog", lambda *a, **k: catalog)
    assert main([*args, "--no-decontam"]) == 0
    captured = capsys.readouterr()
    assert "decontamination: OFF (--no-decontam)" in captured.err
    assert "NOT decontaminated (no benchmark given)" in captured.out
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["benchmark"] is None


def test_the_catalog_cache_sits_under_the_judges_cache_root(monkeypatch, tmp_path: Path) -> None:
    """One cache folder name for the whole project (~/.cache/cuda-agent), not a second cuda_agent/ beside it."""
    from cuda_agent.judge import cache_root
    from cuda_agent.synth.catalog import default_cache_dir

    monkeypatch.delenv("CUDA_AGENT_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_cache_dir() == cache_root() / "synth" == tmp_path / ".cache" / "cuda-agent" / "synth"
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "elsewhere"))
    assert default_cache_dir() == cache_root() / "synth" == tmp_path / "elsewhere" / "synth"


def test_summary_records_the_benchmark_used(no_crawl, tmp_path: Path, capsys) -> None:
    bench = tmp_path / "bench"
    (bench / "level1").mkdir(parents=True)
    (bench / "level1" / "1_relu_double.py").write_text(BENCH_TASK)
    out = tmp_path / "out"
    code = main(["synth", "--out", str(out), "--static-only", "--tasks", "3", "--quiet", "--benchmark", str(bench)])
    assert code == 0
    recorded = json.loads((out / "summary.json").read_text())["benchmark"]
    assert recorded["path"] == str(bench.resolve()) and recorded["tasks"] == 1 and len(recorded["digest"]) == 64
    assert f"decontaminated against {bench.resolve()} (1 tasks" in capsys.readouterr().out
    (bench / "level1" / "1_relu_double.py").write_text(BENCH_TASK.replace("* 2", "* 3"))
    assert BenchmarkIndex.from_dir(bench).digest != recorded["digest"]  # the digest is of the contents


def test_an_unwritable_out_is_refused_before_the_crawl(monkeypatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setattr(pipeline_mod, "load_catalog", crawl_forbidden)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    start = time.monotonic()
    assert main(["synth", "--out", str(blocker / "out"), "--static-only", "--tasks", "2", "--no-decontam"]) == 2
    err = capsys.readouterr().err
    assert "cannot write to --out" in err and "Traceback" not in err and time.monotonic() - start < 5
    if os.geteuid() != 0:  # root writes through permission bits
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert main(["synth", "--out", str(locked), "--static-only", "--tasks", "2", "--no-decontam"]) == 2
        assert "cannot write to --out" in capsys.readouterr().err


def test_summary_table_and_rates_say_what_they_mean() -> None:
    summary = Summary({"torch#1": 10}, {"torch#1": 1.0})
    summary.accepted["torch#1"] = 4
    summary.resumed = 4  # all four came from an earlier run
    summary.skipped_stages["timing"] = 4
    summary.started, summary.ended = 0.0, 100.0
    data = summary.to_json()
    assert data["accepted_per_hour"] == 0.0  # this run made nothing new
    text = summary.format()
    assert "(10 -> 4)" in text and "requested -> accepted" in text and "4 resumed" in text
    assert "timing" in text and "skipped on 4 task(s)" in text


def test_a_resumed_run_counts_only_its_own_rate(no_crawl, tmp_path: Path) -> None:
    mix = {"torch#1": 0.5, "torch#2": 0.5}
    Pipeline(PipelineConfig(out_dir=tmp_path, num_tasks=6, mix=mix, execute=False, progress=False)).run()
    again = Pipeline(PipelineConfig(out_dir=tmp_path, num_tasks=6, mix=mix, execute=False, progress=False)).run()
    assert again.total_accepted == 6 and again.resumed == 6
    assert again.to_json()["accepted_per_hour"] == 0.0


@pytest.mark.slow
def test_cpu_only_run_makes_exactly_the_requested_count(catalog, tmp_path: Path) -> None:
    cfg = PipelineConfig(out_dir=tmp_path, num_tasks=2, mix={"torch#1": 1.0}, workers=2, cpu_only=True,
                         compile=False, progress=False, task_timeout_s=120, max_minutes=4)  # fmt: skip
    summary = Pipeline(cfg, catalog=catalog).run()
    records = read_journal(tmp_path / "journal.jsonl")
    assert summary.total_accepted == 2
    assert sum(1 for r in records if r["status"] == "accepted") == 2
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "tasks.parquet").num_rows == 2
    data = summary.to_json()
    assert "timing" not in data["reached_stage"] and data["skipped_stage"]["timing"] >= 2
    accepted = [r for r in records if r["status"] == "accepted"]
    assert all("timing" in r["skipped_stages"] and "timing" not in r["stages"] for r in accepted)


@pytest.mark.slow
def test_ctrl_c_saves_and_stops_without_worker_tracebacks(catalog, tmp_path: Path) -> None:
    (tmp_path / "catalog.json").write_text(json.dumps(catalog_to_json(catalog)))
    (tmp_path / "driver.py").write_text(DRIVER)
    out = tmp_path / "out"
    command = [sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "catalog.json"), "synth", "--out",
               str(out), "--cpu-only", "--no-compile", "--workers", "2", "--tasks", "200", "--mix", "1:1.0", "--no-decontam"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip  (its own group, as a terminal's job is)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # wait until the workers have finished a task
            journal = out / "journal.jsonl"
            if journal.is_file() and any("eager" in r.get("stages", []) for r in read_journal(journal)):
                break
            time.sleep(0.5)
        else:
            pytest.fail("no task went through the workers within 120 s")
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole group
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert "interrupted:" in err and "run the same command again to resume" in err
    assert (out / "tasks.parquet").is_file() and (out / "summary.json").is_file()


QUIET_DRIVER = '''import logging, sys, warnings
if __name__ == "__main__":
    import contextlib
    from cuda_agent.commands.synth import silence_libraries
    from cuda_agent.synth.filters.execute import ExecConfig
    from cuda_agent.synth.workers import WorkerPool
    code = open(sys.argv[2]).read()
    with silence_libraries() if sys.argv[1] == "quiet" else contextlib.nullcontext():
        with WorkerPool(1, ExecConfig(device="cpu", band_ms=None, compile=False), task_timeout_s=120) as pool:
            pool.submit("1", code)
            results = []
            while not results:
                results += list(pool.poll(1.0))
        warnings.warn("a warning in the parent")
        logging.getLogger("torch.utils.cpp_extension").warning("a library log record in the parent")
    print("checked", results[0][1].stage)
'''

# A task whose import warns the way libraries do (torch on a machine without CUDA, deprecations).
NOISY_TASK = '''import logging
import warnings

import torch
import torch.nn as nn

warnings.warn("a library warning in the worker")
logging.getLogger("torch.utils.cpp_extension").warning("No CUDA runtime is found (a library log record)")


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x) + 1


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
'''


def test_quiet_silences_library_warnings_here_and_in_workers(tmp_path: Path) -> None:
    (tmp_path / "driver.py").write_text(QUIET_DRIVER)
    (tmp_path / "task.py").write_text(NOISY_TASK)
    outputs = {}
    for mode in ("loud", "quiet"):
        done = subprocess.run([sys.executable, str(tmp_path / "driver.py"), mode, str(tmp_path / "task.py")],
                              capture_output=True, text=True, timeout=180)  # fmt: skip
        assert done.returncode == 0 and "checked" in done.stdout, done.stderr[-3000:]
        outputs[mode] = done.stderr
    assert "a library warning in the worker" in outputs["loud"] and "No CUDA runtime" in outputs["loud"]
    assert "a warning in the parent" in outputs["loud"]
    assert outputs["quiet"].strip() == "", outputs["quiet"][-3000:]


def test_quiet_leaves_no_global_state_behind(no_crawl, tmp_path: Path) -> None:
    import logging
    import warnings

    before = (dict(os.environ), logging.root.manager.disable, list(warnings.filters))
    assert main(["synth", "--out", str(tmp_path / "o"), "--static-only", "--tasks", "2", "--quiet", "--no-decontam"]) == 0
    assert (dict(os.environ), logging.root.manager.disable, list(warnings.filters)) == before
