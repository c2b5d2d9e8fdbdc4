"""`cuda-agent solve`: tasks from files and folders, live progress, summary, JSONL output, concurrency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted_llm import RELU_TASK as TASK
from scripted_llm import Reply, ScriptedLLM, call

from cuda_agent.cli import main
from cuda_agent.task import TaskError
from cuda_agent.tasks import collect_tasks

SCRIPT = [
    lambda r: Reply(tool_calls=[call("Read", None, file_path="model.py"), call("Bash", None, command="ls kernels")]),
    lambda r: Reply(content="Nothing to do in this test."),
]


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "relu_a.py").write_text(TASK)
    (folder / "relu_b.py").write_text(TASK)
    (folder / "notes.txt").write_text("not a task")
    return folder


def test_collect_tasks_from_files_folders_and_duplicates(task_dir: Path, tmp_path: Path) -> None:
    nested = tmp_path / "nested" / "my_op"
    nested.mkdir(parents=True)
    (nested / "model.py").write_text(TASK)
    tasks = collect_tasks([str(task_dir), str(task_dir / "relu_a.py"), str(nested), str(tmp_path / "nested")])
    assert [t.name for t in tasks] == ["relu_a", "relu_b", "relu_a-2", "my_op", "my_op-2"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskError, match="holds no tasks"):
        collect_tasks([str(tmp_path / "empty")])


def test_solve_runs_episodes_concurrently_with_progress_summary_and_jsonl(task_dir: Path, tmp_path: Path,
                                                                         capsys) -> None:  # fmt: skip
    runs, out = tmp_path / "runs", tmp_path / "out" / "trajectories.jsonl"
    with ScriptedLLM(SCRIPT) as server:
        code = main(["solve", str(task_dir), "--model", "scripted", "--base-url", server.url, "--runs-dir", str(runs),
                     "--concurrency", "2", "--no-judge", "--json", "--out", str(out), "--isolation", "none"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summaries = [json.loads(line) for line in captured.out.splitlines()]
    assert sorted(s["task"] for s in summaries) == ["relu_a", "relu_b"]
    assert all(s["exit"] == "finished" and s["turns"] == 2 and s["reward"] is None for s in summaries)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["task"]["name"] for r in records) == ["relu_a", "relu_b"]
    assert all(r["state"] == "finished" and r["judge"]["status"] == "skipped" for r in records)
    for name in ("relu_a", "relu_b"):
        assert (runs / name / "workspace" / "model.py").read_text() == TASK
        assert json.loads((runs / name / "trajectory.jsonl").read_text())["exit"]["status"] == "finished"
    err = captured.err
    assert "[relu_a] turn 1/150" in err and "[relu_b]   -> Bash ls kernels" in err
    assert "[relu_a] stopped after 2 turn(s): finished" in err
    assert err.count("Bash sandbox: mechanism: none; network: NOT isolated") == 1
    table = err[err.index("task "):]
    assert "exit" in table and "relu_a" in table and "relu_b" in table and "skipped" in table
    assert len(server.requests) == 4


def test_resume_skips_finished_episodes(task_dir: Path, tmp_path: Path, capsys) -> None:
    runs = tmp_path / "runs"
    args = ["solve", str(task_dir / "relu_a.py"), "--model", "m", "--runs-dir", str(runs), "--no-judge",
            "--isolation", "none", "--quiet"]  # fmt: skip
    with ScriptedLLM(SCRIPT) as server:
        assert main([*args, "--base-url", server.url]) == 0
        assert main([*args, "--base-url", server.url, "--resume", "--json"]) == 0
    captured = capsys.readouterr()
    assert len(server.requests) == 2  # the second run asked the model nothing
    assert "already finished; skipped (--resume)" in captured.err
    assert json.loads(captured.out.splitlines()[-1])["exit"] == "finished"


def test_existing_workspace_needs_force(task_dir: Path, tmp_path: Path, capsys) -> None:
    runs = tmp_path / "runs"
    (runs / "relu_a" / "workspace").mkdir(parents=True)
    (runs / "relu_a" / "workspace" / "keep.txt").write_text("mine")
    with ScriptedLLM(SCRIPT) as server:
        code = main(["solve", str(task_dir / "relu_a.py"), "--model", "m", "--base-url", server.url, "--runs-dir",
                     str(runs), "--no-judge", "--isolation", "none", "--quiet"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1 and "crashed" in captured.err and "not empty" in captured.err
    assert (runs / "relu_a" / "workspace" / "keep.txt").read_text() == "mine"


def test_model_errors_and_bad_arguments_give_nonzero_exit_codes(task_dir: Path, tmp_path: Path, capsys) -> None:
    with ScriptedLLM([SCRIPT[0], lambda r: Reply(status=401, error="bad key")]) as server:
        code = main(["solve", str(task_dir / "relu_a.py"), "--model", "m", "--base-url", server.url, "--runs-dir",
                     str(tmp_path / "runs"), "--no-judge", "--isolation", "none"])  # fmt: skip
    assert code == 1 and "model_error" in capsys.readouterr().err
    assert main(["solve", str(task_dir / "relu_a.py"), "--runs-dir", str(tmp_path / "r")]) == 2
    assert "no model name" in capsys.readouterr().err
    assert main(["solve", str(tmp_path / "missing.py"), "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "task file not found" in capsys.readouterr().err
