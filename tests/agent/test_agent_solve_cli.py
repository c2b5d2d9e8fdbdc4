"""`cuda-agent solve`: tasks from files and folders, live progress, summary, JSONL output, concurrency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted_llm import RELU_TASK as TASK
from scripted_llm import Reply, ScriptedLLM, call

from cuda_agent.cli import main
from cuda_agent.task import TaskError, load_task, name_from_path
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


def test_a_bare_model_py_is_named_after_its_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    """`cuda-agent solve model.py` inside a task folder: the task is that folder's name, not "" (whose
    episode folder was the runs folder itself, so two such tasks collided with FileExistsError)."""
    for name in ("softmax", "relu"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.py").write_text(TASK)
    monkeypatch.chdir(tmp_path / "softmax")
    assert load_task("model.py").name == "softmax"
    assert load_task(Path("./model.py")).name == "softmax"
    assert load_task("../relu/model.py").name == "relu"
    assert name_from_path(Path("/model.py")) == "model"  # no folder name to take: the file's
    assert [t.name for t in collect_tasks(["model.py", "./model.py", "."])] == ["softmax", "softmax-2", "softmax-3"]
    runs = tmp_path / "runs"
    with ScriptedLLM(SCRIPT + SCRIPT) as server:
        base = ["--model", "m", "--base-url", server.url, "--runs-dir", str(runs), "--no-judge", "--isolation",
                "none", "--quiet"]  # fmt: skip
        assert main(["solve", "model.py", *base]) == 0
        monkeypatch.chdir(tmp_path / "relu")
        assert main(["solve", "model.py", *base]) == 0, capsys.readouterr().err
    assert sorted(p.name for p in runs.iterdir()) == ["relu", "softmax"]
    assert (runs / "relu" / "workspace" / "model.py").is_file() and (runs / "softmax" / "trajectory.jsonl").is_file()


def test_unique_names_never_reuse_a_name_a_task_already_has(tmp_path: Path) -> None:
    for name in ("x", "x-2"):
        (tmp_path / f"{name}.py").write_text(TASK)
    tasks = collect_tasks([str(tmp_path / "x.py"), str(tmp_path / "x.py"), str(tmp_path / "x-2.py")])
    assert [t.name for t in tasks] == ["x", "x-3", "x-2"]


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
