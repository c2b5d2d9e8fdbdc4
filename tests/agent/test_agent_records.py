"""Trajectory serialisation, progress tracking from the workspace's own checks, config loading, prompts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cuda_agent.agent.config import AgentConfig, ConfigError, load_config
from cuda_agent.agent.progress import ProgressTracker
from cuda_agent.agent.prompts import FALLBACK_SKILL, system_prompt, task_prompt
from cuda_agent.agent.trajectory import TrajectoryWriter, dumps, load_trajectory, strip_timings

# -- trajectory -------------------------------------------------------------------------------------


def test_dumps_is_canonical() -> None:
    assert dumps({"b": 1, "a": {"d": "ü", "c": [Path("/x")]}}) == '{"a":{"c":["/x"],"d":"ü"},"b":1}'


def test_strip_timings_removes_them_at_any_depth() -> None:
    record = {"timings": {"a": 1}, "turns": [{"turn": 1, "timings": {"model_s": 2}}], "x": {"timings": 3, "y": 4}}
    assert strip_timings(record) == {"turns": [{"turn": 1}], "x": {"y": 4}}
    assert record["timings"] == {"a": 1}  # a copy, the original is untouched


def test_writer_rewrites_one_line_atomically(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "t.jsonl"
    writer = TrajectoryWriter(path, {"task": {"name": "x"}})
    messages: list[dict] = []
    writer.update(messages=messages)
    messages.append({"role": "user", "content": "hi"})
    writer.flush()
    lines = path.read_text().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["state"] == "running" and record["format"] == "cuda-agent.trajectory/1"
    assert record["messages"] == [{"role": "user", "content": "hi"}]
    assert load_trajectory(path) == record
    assert [p.name for p in path.parent.iterdir()] == ["t.jsonl"]  # no temporary files left


def test_writer_without_a_path_keeps_the_record_in_memory() -> None:
    writer = TrajectoryWriter(None, {"k": 1})
    writer.update(x=2)
    assert json.loads(writer.line())["x"] == 2


# -- progress ---------------------------------------------------------------------------------------

COMPILE_OK = "Compile success: cuda_extension.so in 12.3 s (2 compiled, 0 reused)"
COMPILE_FAIL = "Compilation failed:\nkernels/relu.cu(7): error: expected a \";\""
VERIFY_OK = "PASS [ok] reward +1: correct on 5 input sets (not timed)"
PROFILE_OK = """PASS [ok] reward +3: correct on 5 input sets; ...
  candidate         0.1000 ms  (IQR 0.0990-0.1010)
  eager             0.2000 ms  speedup 2.000x (95% low 1.950)
  torch.compile     0.1500 ms  speedup 1.500x (95% low 1.420)"""


def test_progress_follows_builds_checks_and_keeps_the_best() -> None:
    tracker = ProgressTracker()
    assert tracker.label() == "-"
    assert not tracker.observe(1, "ls", "x", 0)
    assert tracker.observe(2, "bash utils/compile.sh", COMPILE_FAIL, 1)
    assert tracker.last_build["ok"] is False and tracker.label() == "compile failed"
    tracker.observe(3, "bash utils/compile.sh 2>&1 | tail -5", COMPILE_OK, 0)
    assert tracker.last_build["ok"] is True and tracker.label() == "compiled"
    tracker.observe(4, "python3 -m utils.verification", VERIFY_OK, 0)
    assert tracker.label() == "reward +1, not timed"
    tracker.observe(5, "python3 -m utils.profiling", PROFILE_OK, 0)
    assert tracker.last_profiling["speedup_vs_compile"] == 1.5 and tracker.last_profiling["reward"] == 3
    assert tracker.label() == "reward +3 (1.50x vs compile)"
    tracker.observe(6, "bash utils/compile.sh", COMPILE_FAIL, 1)  # a later failure does not erase the best
    assert tracker.label() == "reward +3 (1.50x vs compile)" and tracker.last_build["ok"] is False
    snapshot = tracker.snapshot()
    assert snapshot["best"]["turn"] == 5 and snapshot["last_build"]["turn"] == 6


def test_progress_records_checks_that_cannot_run() -> None:
    tracker = ProgressTracker()
    out = "cannot run here: no CUDA GPU is visible: the judge needs one to verify and time kernels"
    tracker.observe(1, "python3 -m utils.verification", out, 3)
    assert tracker.last_verification["status"] == "unavailable"
    assert tracker.last_verification["reason"].startswith("no CUDA GPU")
    assert tracker.label() == "-"


# -- config -----------------------------------------------------------------------------------------


def test_config_precedence_file_env_options(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('[model]\nname = "file-model"\ntemperature = 0.2\napi_key_env = "MY_KEY"\n'
                    '[agent]\nmax_turns = 10\n[sandbox]\nisolation = "none"\n')  # fmt: skip
    env = {"CUDA_AGENT_MODEL": "env-model", "MY_KEY": "secret", "CUDA_AGENT_MAX_TURNS": "20",
           "OPENAI_BASE_URL": "http://env/v1"}  # fmt: skip
    config = load_config(path, {"agent": {"max_turns": 30, "context_tokens": None}}, environ=env)
    assert config.model.name == "env-model" and config.model.temperature == 0.2
    assert config.model.api_key == "secret" and config.model.base_url == "http://env/v1"
    assert config.max_turns == 30 and config.context_tokens == 131_072
    assert config.sandbox.isolation == "none"
    assert "secret" not in json.dumps(config.public())


def test_config_defaults_and_json(tmp_path: Path) -> None:
    assert load_config(environ={}) == AgentConfig()
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"model": {"name": "m", "extra_body": {"top_k": 20}}, "agent": {"time_limit_s": 60}}))
    config = load_config(environ={"CUDA_AGENT_CONFIG": str(path)})
    assert config.model.extra_body == {"top_k": 20} and config.time_limit_s == 60


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[model]\nnmae = 'x'\n", "unknown [model] setting(s): nmae"),
        ("[agnet]\n", "unknown section(s) agnet"),
        ("[sandbox]\nisolation = 'docker'\n", "isolation must be one of"),
        ("[model\n", "not valid TOML"),
    ],
)
def test_config_errors_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(path, environ={})


def test_config_env_values_are_converted_or_rejected() -> None:
    assert load_config(environ={"CUDA_AGENT_TEMPERATURE": "0.7"}).model.temperature == 0.7
    with pytest.raises(ConfigError, match="max_turns"):
        load_config(environ={"CUDA_AGENT_MAX_TURNS": "many"})
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config("/nonexistent/agent.toml", environ={})


# -- prompts ----------------------------------------------------------------------------------------


def test_system_prompt_is_skill_md_plus_the_environment(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("# The skill\nDo the thing.\n")
    config = AgentConfig(max_turns=42, time_limit_s=3600)
    prompt = system_prompt(tmp_path, "/workspace", config, {"network": "isolated: own network namespace"})
    assert prompt.startswith("# The skill\nDo the thing.\n\n# Your environment")
    assert "The workspace is /workspace" in prompt and "no network access" in prompt
    assert "at most 42 turns" in prompt and "131072 tokens" in prompt and "1 h of wall-clock" in prompt
    assert "TASK_COMPLETE" in prompt
    fallback = system_prompt(tmp_path / "missing", "/w", config, {})
    assert fallback.startswith(FALLBACK_SKILL.rstrip()) and "with network access" in fallback


def test_task_prompt_shows_the_reference() -> None:
    prompt = task_prompt("relu", "class Model: ...\n", "/workspace")
    assert "Task `relu`" in prompt and "```python\nclass Model: ...\n```" in prompt
    assert "/workspace/kernels/" in prompt
