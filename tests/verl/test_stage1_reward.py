"""Stage 1's custom reward function: good, malformed and hostile single-turn responses, and a judge that
is down. Good responses are judged by a real judge server (HTTP, tokens, store, queue) whose executor
returns a known verdict; the first one goes through verl's own reward manager and reward-fn loader.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

pytest.importorskip("verl.experimental.reward_loop", reason="needs verl: these tests run in .venv-verl (bash scripts/setup_verl.sh)")

from verl_helpers import (
    BINDING,
    KERNEL,
    MODEL_NEW,
    TASK_SOURCE,
    TOKEN,
    KnownVerdictExecutor,
    closed_port_url,
    compose,
    judge_server,
    recipe_lines,
    rejected_outcome,
)

from cuda_agent.task import load_task
from cuda_agent.train.verl.data import SINGLE_TURN, row_for
from cuda_agent.train.verl.reward import compute_score

ROW = row_for(load_task(TASK_SOURCE, name="relu"), "tasks", SINGLE_TURN, 0, "train")
GOOD = (f"Here is the kernel.\n\n```cuda kernels/relu.cu\n{KERNEL}```\n\n```cpp kernels/relu_binding.cpp\n"
        f"{BINDING}```\n\n```python model_new.py\n{MODEL_NEW}```\n")  # fmt: skip


def _score(response: str, **kwargs) -> dict:
    return asyncio.run(compute_score(data_source=ROW["data_source"], solution_str=response,
                                     ground_truth=ROW["reward_model"]["ground_truth"],
                                     extra_info=dict(ROW["extra_info"]), **kwargs))  # fmt: skip


@pytest.fixture()
def judge(tmp_path, monkeypatch):
    executor = KnownVerdictExecutor()
    with judge_server(tmp_path, executor) as url:
        monkeypatch.setenv("CUDA_AGENT_JUDGE_URL", url)
        monkeypatch.setenv("CUDA_AGENT_JUDGE_TOKEN", TOKEN)
        yield executor


def test_a_good_response_through_verls_reward_manager(judge, tiny_model: Path, tokenizer) -> None:
    import torch
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.protocol import DataProto
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config = compose("ppo_trainer", recipe_lines("stage1_single_turn_ppo.sh", MODEL=str(tiny_model), JUDGE_URL="local")[1:])
    response = torch.tensor(tokenizer.encode(GOOD + "<|im_end|>", add_special_tokens=False))
    prompt = torch.tensor(tokenizer.apply_chat_template(ROW["prompt"], add_generation_prompt=True, tokenize=True,
                                                        return_dict=False))  # fmt: skip
    data = DataProto.from_dict(
        tensors={"prompts": prompt[None], "responses": response[None],
                 "attention_mask": torch.ones(1, len(prompt) + len(response), dtype=torch.long)},
        non_tensors={k: [ROW[k]] for k in ("data_source", "reward_model", "extra_info")},
    )  # fmt: skip

    async def go():
        manager = NaiveRewardManager(config, tokenizer, get_custom_reward_fn(config))
        return await manager.run_single(data)

    result = asyncio.run(go())
    assert result["reward_score"] == 3.0, result["reward_extra_info"]["reason"]
    info = result["reward_extra_info"]
    assert info["status"] == "ok" and info["judged"] and info["milestone"] == 3
    assert info["speedup_vs_compile"] == pytest.approx(1.6)
    assert judge.received == [{"kernels/relu.cu": KERNEL, "kernels/relu_binding.cpp": BINDING,
                               "model_new.py": MODEL_NEW}]  # fmt: skip


@pytest.mark.parametrize("response, reason", [
    ("I would fuse the ReLU into one kernel.", "no fenced code blocks"),
    (f"```cuda kernels/relu.cu\n{KERNEL}```\n", "no model_new.py"),
    (f"```python model_new.py\n{MODEL_NEW}", "never closed"),
    (f"```python\n{MODEL_NEW}```\n", "names no file"),
])  # fmt: skip
def test_malformed_responses_score_minus_one_without_the_judge(judge, response: str, reason: str) -> None:
    result = _score(response)
    assert (result["score"], result["status"], result["milestone"]) == (-1.0, "bad_response", -1)
    assert reason in result["reason"]
    assert judge.received == []


@pytest.mark.parametrize("response, reason", [
    (f"```python ../../model_new.py\n{MODEL_NEW}```\n", "'..' is not allowed"),
    (f"```python /etc/cron.d/model_new.py\n{MODEL_NEW}```\n", "absolute paths"),
    (f"```python model.py\nclass Model: pass\n```\n```python model_new.py\n{MODEL_NEW}```\n", "not an allowed file"),
    (f"```bash utils/compile.sh\necho ok\n```\n```python model_new.py\n{MODEL_NEW}```\n", "not an allowed file"),
    (f"```cpp kernels/binding_registry.h\n#pragma once\n```\n```python model_new.py\n{MODEL_NEW}```\n",
     "not an allowed file"),
    (f"```python model_new.py\n{MODEL_NEW}```\n```python model_new.py\nimport os\n```\n", "appears twice"),
    (f"```cuda kernels/big.cu\n{'// x' * 100_000}\n```\n```python model_new.py\n{MODEL_NEW}```\n", "the limit is"),
    ("```python model_new.py\n" + "#" * (3 << 20) + "\n```\n", "at most"),
    ("```python model_new.py\nimport torch\n\ud800\n```\n", "lone surrogates"),
])  # fmt: skip
def test_hostile_responses_score_minus_one_and_never_reach_the_judge(judge, response: str, reason: str) -> None:
    result = _score(response)
    assert (result["score"], result["status"]) == (-1.0, "bad_response")
    assert reason in result["reason"]
    assert judge.received == []


def test_hostile_code_is_judged_never_run_by_the_reward_function(judge, tmp_path: Path) -> None:
    """Code that parses is the judge's to run (in its sandboxed workers); scoring it runs nothing, and the
    verdict decides the score."""
    marker = tmp_path / "ran"
    hostile = f"import os\nopen({str(marker)!r}, 'w').write('pwned')\nos.system('touch {marker}')\n" + MODEL_NEW
    judge.outcome = rejected_outcome("static checks failed: import of os")
    result = _score(f"```python model_new.py\n{hostile}```\n", workdir=str(tmp_path / "scratch"))
    assert (result["score"], result["status"], result["judged"]) == (-1.0, "rejected", True)
    assert judge.received == [{"model_new.py": hostile}]
    assert not marker.exists()
    assert list((tmp_path / "scratch").iterdir()) == [], "the scratch workspace is removed"


def test_a_judge_that_is_down_gives_no_reward(monkeypatch, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="cuda_agent.train.verl")
    monkeypatch.setenv("CUDA_AGENT_JUDGE_TOKEN", TOKEN)
    result = _score(GOOD, judge_url=closed_port_url(), failure_reward=0.0)
    assert (result["score"], result["status"], result["judged"]) == (0.0, "unavailable", False)
    assert "cannot reach the judge" in result["reason"]
    assert any("no verdict for task relu" in r.getMessage() for r in caplog.records)


def test_a_row_without_its_task_is_reported_not_raised() -> None:
    result = asyncio.run(compute_score(data_source="cuda_agent/tasks", solution_str=GOOD, ground_truth="x",
                                       extra_info={"index": 3}, failure_reward=0.0))  # fmt: skip
    assert (result["score"], result["status"], result["judged"]) == (0.0, "bad_row", False)
    assert "no task" in result["reason"]


def test_a_judge_url_without_a_token_is_reported_not_raised(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CUDA_AGENT_JUDGE_TOKEN", raising=False)
    monkeypatch.setenv("CUDA_AGENT_JUDGE_TOKEN_FILE", str(tmp_path / "empty-tokens"))
    (tmp_path / "empty-tokens").write_text("# no token yet\n")
    result = _score(GOOD, judge_url=closed_port_url() + "/no-token", failure_reward=-0.25)
    assert (result["score"], result["status"], result["judged"]) == (-0.25, "unavailable", False)
    assert "no token" in result["reason"]


def test_without_a_url_the_nodes_own_judge_service_is_asked(monkeypatch) -> None:
    """No judge URL: this node's JudgeService. Without a GPU it cannot judge, and says so: no reward."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("with a GPU the local JudgeService would judge for real")
    monkeypatch.delenv("CUDA_AGENT_JUDGE_URL", raising=False)
    result = _score(GOOD)
    assert (result["score"], result["status"], result["judged"]) == (0.0, "unavailable", False)
    assert "GPU" in result["reason"]
