"""Stage 1's agent loop (CudaSingleTurnLoop) through verl's AgentLoopWorker: verl's single-turn generation,
scored in the loop by our reward function against a real judge server. A response the judge judged
trains (mask 1, its reward on the last token); one without a verdict, or a loop that raised, is masked
out of the loss and says why. The model is the one double (a scripted token server).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip(
    "verl.experimental.agent_loop",
    reason="needs verl: these tests run in .venv-verl (bash scripts/setup_verl.sh)",
)

from verl_helpers import (
    BINDING,
    KERNEL,
    MODEL_NEW,
    TASK_SOURCE,
    TOKEN,
    KnownVerdictExecutor,
    ScriptedServerManager,
    closed_port_url,
    compose,
    judge_server,
    recipe_lines,
)

from cuda_agent.train.unjudged import unjudged_metrics
from cuda_agent.train.verl.data import SINGLE_TURN, convert

GOOD = (f"Here is the kernel.\n\n```cuda kernels/relu.cu\n{KERNEL}```\n\n```cpp kernels/relu_binding.cpp\n"
        f"{BINDING}```\n\n```python model_new.py\n{MODEL_NEW}```\n")  # fmt: skip


@pytest.fixture(scope="module")
def stage1(tiny_model: Path, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("stage1")
    (root / "tasks").mkdir()
    (root / "tasks" / "relu.py").write_text(TASK_SOURCE)
    assert convert([root / "tasks"], root / "data", fmt=SINGLE_TURN).written == {"train": 1}
    # the tiny tokenizer spends about a token per two characters: the prompt needs more than 8,192 of them
    lines = recipe_lines("stage1_single_turn_ppo.sh", MODEL=str(tiny_model), DATA=str(root / "data"),
                         PROMPT_LEN="16384", NGPUS="1", JUDGE_URL="local")  # fmt: skip
    return {"config": compose("ppo_trainer", lines[1:]), "data": root / "data" / "train.parquet"}


def _generate(stage1, tokenizer, server):
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    dataset = RLHFDataset([str(stage1["data"])], tokenizer, stage1["config"].data)
    batch = DataProto.from_single_dict(collate_fn([dataset[0]]))

    async def go():
        return await AgentLoopWorker(stage1["config"], llm_client=server).generate_sequences(batch)

    return asyncio.run(go())


def _valid(out) -> int:
    return int(out.batch["attention_mask"][0][out.batch["prompts"].shape[1] :].sum())


def test_a_judged_response_trains_with_its_reward(stage1, tokenizer, tmp_path, monkeypatch) -> None:
    server = ScriptedServerManager(tokenizer, [GOOD])
    executor = KnownVerdictExecutor()
    with judge_server(tmp_path, executor) as url:
        monkeypatch.setenv("CUDA_AGENT_JUDGE_URL", url)
        monkeypatch.setenv("CUDA_AGENT_JUDGE_TOKEN", TOKEN)
        out = _generate(stage1, tokenizer, server)
    valid = _valid(out)
    assert executor.received == [{"kernels/relu.cu": KERNEL, "kernels/relu_binding.cpp": BINDING,
                                  "model_new.py": MODEL_NEW}]  # fmt: skip
    assert out.non_tensor_batch["status"][0] == "ok" and out.non_tensor_batch["judged"][0]
    assert out.batch["rm_scores"][0][valid - 1].item() == 3.0
    assert out.batch["response_mask"][0][:valid].tolist() == [1] * valid


def test_a_response_the_judge_could_not_judge_is_masked(stage1, tokenizer, monkeypatch) -> None:
    server = ScriptedServerManager(tokenizer, [GOOD])
    monkeypatch.setenv("CUDA_AGENT_JUDGE_URL", closed_port_url())
    monkeypatch.setenv("CUDA_AGENT_JUDGE_TOKEN", TOKEN)
    out = _generate(stage1, tokenizer, server)
    extra = out.non_tensor_batch
    assert extra["status"][0] == "unavailable" and not extra["judged"][0]
    assert _valid(out) == len(server.sent[0]) and out.batch["response_mask"][0].sum().item() == 0
    assert unjudged_metrics(extra["reward_extra_info"])["cuda_agent/unjudged_total/unavailable"] == 1


def test_a_generation_that_raises_is_a_masked_sample(stage1, tokenizer, monkeypatch) -> None:
    server = ScriptedServerManager(tokenizer, [])  # the rollout engine fails on the first request
    monkeypatch.setenv("CUDA_AGENT_JUDGE_URL", closed_port_url())
    monkeypatch.setenv("CUDA_AGENT_JUDGE_TOKEN", TOKEN)
    out = _generate(stage1, tokenizer, server)
    extra = out.non_tensor_batch
    assert extra["status"][0] == "rollout_error" and "more turns than were scripted" in extra["reason"][0]
    assert out.batch["response_mask"][0].sum().item() == 0 and _valid(out) == 1
    prompt = out.batch["prompts"][0][out.batch["attention_mask"][0][: out.batch["prompts"].shape[1]].bool()]
    assert "relu" in tokenizer.decode(prompt)
