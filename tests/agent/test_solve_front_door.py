"""`cuda-agent solve` at the front door: the model server is checked up front, a server that goes away stops
the batch, Ctrl-C does not wait for a generation, broken tasks are skipped, `--resume` finishes what was
left undone. The model server is the scripted one: a real HTTP server on 127.0.0.1 that the agent's
OpenAI client talks to.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from scripted_llm import RELU_TASK as TASK
from scripted_llm import Reply, ScriptedLLM, call

from cuda_agent.cli import main

SCRIPT = [
    lambda r: Reply(tool_calls=[call("Bash", None, command="ls kernels")]),
    lambda r: Reply(content="Done."),
]


@pytest.fixture(autouse=True)
def _no_server_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "CUDA_AGENT_BASE_URL", "CUDA_AGENT_CONFIG", "CUDA_AGENT_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    folder = tmp_path / "tasks"
    folder.mkdir()
    for name in ("a_relu", "b_relu", "c_relu"):
        (folder / f"{name}.py").write_text(TASK)
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def solve(*args: str) -> list[str]:
    return ["solve", *args, "--model", "m", "--isolation", "none"]


def no_warm(tmp_path: Path) -> list[str]:
    """A (empty) cache for the episodes to read, so that `solve` skips warming the machine's shared build
    cache: these episodes never compile, and warming costs a precompiled header (a minute of CPU)."""
    seed = tmp_path / "cache-seed"
    seed.mkdir(exist_ok=True)
    return ["--cache-seed", str(seed)]


def fast_retries(tmp_path: Path) -> str:
    path = tmp_path / "fast.toml"
    path.write_text("[model]\nmax_retries = 1\nretry_base_s = 0.05\nrequest_timeout_s = 10\n")
    return str(path)


def test_a_dead_server_is_reported_up_front_with_its_url(tasks: Path, tmp_path: Path, capsys) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    start = time.monotonic()
    code = main(solve(str(tasks), "--base-url", url, "--runs-dir", str(tmp_path / "runs")))
    err = capsys.readouterr().err
    assert code == 3, err
    assert time.monotonic() - start < 60  # on a loaded machine; without the check: ~51 s of retries per task
    assert "retry" not in err
    assert f"cannot reach the model server at {url}" in err and "refused" in err.lower()
    assert not (tmp_path / "runs").exists()  # no episode started, nothing judged


def test_a_model_the_server_does_not_serve_is_named(tasks: Path, tmp_path: Path, capsys) -> None:
    with ScriptedLLM(SCRIPT, models=["Qwen/Qwen3-32B"]) as server:
        code = main(solve(str(tasks), "--base-url", server.url, "--runs-dir", str(tmp_path / "runs")))
    err = capsys.readouterr().err
    assert code == 3 and "does not serve model 'm'" in err and "Qwen/Qwen3-32B" in err
    assert server.requests == []


def test_a_server_without_tool_calling_gets_the_flags_it_needs(tasks: Path, tmp_path: Path, capsys) -> None:
    refusal = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    with ScriptedLLM(lambda r: Reply(status=400, error=refusal), models=["m"]) as server:
        code = main(solve(str(tasks), "--base-url", server.url, "--runs-dir", str(tmp_path / "runs")))
    err = capsys.readouterr().err
    assert code == 3 and server.url in err
    assert "vllm serve MODEL --enable-auto-tool-choice --tool-call-parser" in err and "sglang" in err
    assert len(server.preflights) == 1 and server.preflights[0]["max_tokens"] == 1
    assert server.preflights[0]["tool_choice"] == "auto" and server.requests == []


def test_no_base_url_is_an_error_not_a_hosted_api(tasks: Path, tmp_path: Path, capsys) -> None:
    code = main(solve(str(tasks), "--runs-dir", str(tmp_path / "runs")))
    err = capsys.readouterr().err
    assert code == 2 and "no model server: pass --base-url" in err and "api.openai.com" in err


def test_the_batch_stops_when_the_server_goes_away(tasks: Path, tmp_path: Path, capsys) -> None:
    holder: dict[str, ScriptedLLM] = {}

    def vanish(request: dict) -> Reply:
        server = holder["server"]
        assert server._server is not None
        listener = server._server
        threading.Thread(target=lambda: (listener.shutdown(), listener.server_close()), daemon=True).start()
        time.sleep(0.5)  # the listener closes while this reply is on its way
        return Reply(status=503, error="shutting down")

    with ScriptedLLM([SCRIPT[0], vanish]) as server:
        holder["server"] = server
        start = time.monotonic()
        code = main(solve(str(tasks), "--base-url", server.url, "--runs-dir", str(tmp_path / "runs"), "--no-judge",
                          "--config", fast_retries(tmp_path), "--json"))  # fmt: skip
        elapsed = time.monotonic() - start
    captured = capsys.readouterr()
    assert code == 1, captured.err
    assert elapsed < 40
    rows = {json.loads(line)["task"]: json.loads(line) for line in captured.out.splitlines()}
    assert rows["a_relu"]["exit"] == "model_error"
    assert not (tmp_path / "runs" / "b_relu").exists() and not (tmp_path / "runs" / "c_relu").exists()
    assert "stopped the batch: the model server stopped answering" in captured.err
    assert "2 task(s) not started" in captured.err
    assert "retry 1/1" in captured.err  # retries are visible, not silent


def test_a_model_error_before_any_tool_is_not_judged(tmp_path: Path, capsys) -> None:
    (tmp_path / "t.py").write_text(TASK)

    def script(request: dict) -> Reply:  # the preflight's one token passes, the first real turn fails
        return Reply(content="OK") if request.get("max_tokens") == 1 else Reply(status=400, error="bad request")

    with ScriptedLLM(script) as server:
        code = main(solve(str(tmp_path / "t.py"), "--base-url", server.url, "--runs-dir", str(tmp_path / "runs"),
                          "--json", "--quiet", *no_warm(tmp_path)))  # fmt: skip
    captured = capsys.readouterr()
    row = json.loads(captured.out.splitlines()[-1])
    assert code == 1 and row["exit"] == "model_error"
    assert row["judge"]["status"] == "skipped" and "nothing to judge" in row["judge"]["reason"]


def test_first_ctrl_c_cancels_the_request_in_flight(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(TASK)
    runs = tmp_path / "runs"
    with ScriptedLLM(SCRIPT, delay_s=120) as server:
        command = solve(str(tmp_path / "t.py"), "--base-url", server.url, "--runs-dir", str(runs), "--no-judge")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen([sys.executable, "-m", "cuda_agent", *command], stderr=subprocess.PIPE, text=True, env=env)
        assert proc.stderr is not None
        seen = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            seen.append(line)
            if "turn 1/" in line:
                break
        assert any("turn 1/" in line for line in seen), "".join(seen)
        time.sleep(0.5)  # the request is now being answered (for 120 s)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            rest = proc.communicate(timeout=20)[1]
        finally:
            proc.kill()
        waited = time.monotonic() - sent
    assert waited < 10, rest
    assert proc.returncode == 1, rest
    record = json.loads((runs / "t" / "trajectory.jsonl").read_text())
    assert record["state"] == "finished" and record["exit"]["status"] == "cancelled"


def test_resume_reruns_cancelled_episodes_and_judges_unjudged_ones(tasks: Path, tmp_path: Path, capsys) -> None:
    runs = tmp_path / "runs"
    args = solve(str(tasks / "a_relu.py"), str(tasks / "b_relu.py"), "--runs-dir", str(runs), "--quiet",
                 *no_warm(tmp_path))  # fmt: skip
    with ScriptedLLM(SCRIPT) as server:
        assert main([*args, "--base-url", server.url]) == 0  # no GPU here: both verdicts 'unavailable'
        for name in ("a_relu", "b_relu"):
            assert json.loads((runs / name / "trajectory.jsonl").read_text())["judge"]["status"] == "unavailable"
        path = runs / "b_relu" / "trajectory.jsonl"
        record = json.loads(path.read_text())
        record["exit"] = {"status": "cancelled", "message": "the run was cancelled"}
        path.write_text(json.dumps(record) + "\n")
        capsys.readouterr()
        requests_before = len(server.requests)
        main([*args, "--base-url", server.url, "--resume"])
    err = capsys.readouterr().err
    assert "[a_relu] finished but never judged (unavailable); judging its workspace" in err
    assert "[b_relu] was cancelled; running it again" in err
    assert len(server.requests) - requests_before == 2  # only b_relu asked the model again
    assert json.loads(path.read_text())["exit"]["status"] == "finished"


def test_a_broken_task_is_skipped_with_its_reason_unless_strict(tasks: Path, tmp_path: Path, capsys) -> None:
    (tasks / "broken.py").write_text("class Model(:\n")
    with ScriptedLLM(SCRIPT) as server:
        code = main(solve(str(tasks), "--base-url", server.url, "--runs-dir", str(tmp_path / "runs"), "--no-judge",
                          "--json"))  # fmt: skip
        captured = capsys.readouterr()
        strict = main(solve(str(tasks), "--base-url", server.url, "--runs-dir", str(tmp_path / "r2"), "--strict"))
        strict_err = capsys.readouterr().err
    assert code == 1  # the batch ran, but not every task did
    assert sorted(json.loads(line)["task"] for line in captured.out.splitlines()) == ["a_relu", "b_relu", "c_relu"]
    assert "skipped task" in captured.err and "broken.py" in captured.err and "syntax error" in captured.err
    assert "bad_task" in captured.err
    assert strict == 2 and "syntax error" in strict_err and not (tmp_path / "r2").exists()


def test_no_judge_runs_say_nothing_about_judging_and_force_is_named(tasks: Path, tmp_path: Path, capsys) -> None:
    runs = tmp_path / "runs"
    with ScriptedLLM(SCRIPT) as server:
        assert main(solve(str(tasks / "a_relu.py"), "--base-url", server.url, "--runs-dir", str(runs),
                          "--no-judge")) == 0  # fmt: skip
        err = capsys.readouterr().err
        assert "judging" not in err and "verdict:" not in err
        assert main(solve(str(tasks / "a_relu.py"), "--base-url", server.url, "--runs-dir", str(runs),
                          *no_warm(tmp_path))) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert "pass --force" in err and "overwrite=True" not in err


def test_version_and_python_m() -> None:
    from cuda_agent import __version__

    out = subprocess.run([sys.executable, "-m", "cuda_agent", "--version"], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == f"cuda-agent {__version__}"
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
