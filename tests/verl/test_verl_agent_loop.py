"""CudaAgentLoop through verl's agent-loop API: AgentLoopWorker.generate_sequences on a batch that verl's
RLHFDataset read from our converter's parquet, with stage 4's recipe config and the shipped agent-loop
YAML. The model is the one double (a scripted token server speaking the tiny tokenizer's ids); the tools,
workspace, tool parser, Continuous Token builder and the judge server's HTTP interface are real.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

pytest.importorskip("verl.experimental.agent_loop", reason="needs verl: these tests run in .venv-verl (bash scripts/setup_verl.sh)")

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
    tool_call,
)

from cuda_agent.train.verl.data import AGENT, convert

# A command whose output (about 27,000 characters, 16,000 tiny-tokenizer tokens) is far longer than verl's
# default 256-character tool response and fits our 30,000-character tool output limit.
LONG_OUTPUT = "seq 900 | sed 's/.*/line &: the quick brown fox/'"


# The tiny tokenizer's 1,024-token vocabulary spends about one token per two characters, so the opening messages
# (SKILL.md, the environment, the task, ten tool schemas: about 22,000 characters, 10,300 tiny tokens) need more
# room than the recipe's 8,192 (sized for real tokenizers, about 6,000 tokens). Too small a limit is not a quiet
# left-truncation: the prompt assertions below would fail.
TINY_PROMPT_LEN = 16384


@pytest.fixture(scope="module")
def stage4(tiny_model: Path, tmp_path_factory) -> dict:
    """Stage 4's composed config (test-sized context) and its data, one task per row."""
    root = tmp_path_factory.mktemp("stage4")
    tasks = root / "tasks"
    tasks.mkdir()
    (tasks / "relu.py").write_text(TASK_SOURCE)
    report = convert([tasks], root / "data", fmt=AGENT, val_size=0)
    assert report.written == {"train": 1}
    lines = recipe_lines("stage4_agentic_ppo.sh", ACTOR=str(tiny_model), CRITIC=str(tiny_model),
                         DATA=str(root / "data"), CONTEXT="49152", PROMPT_LEN=str(TINY_PROMPT_LEN), SP="1",
                         NGPUS="1", JUDGE_URL="local")  # fmt: skip
    assert lines[0] == "verl.trainer.main_ppo"
    return {"config": compose("ppo_trainer", lines[1:]), "data": root / "data" / "train.parquet"}


def _batch(config, data: Path, tokenizer, name: str):
    """One row of the parquet as the trainer hands it to the rollout: verl's dataset, collate, DataProto."""
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    dataset = RLHFDataset([str(data)], tokenizer, config.data)
    rows = [dataset[i] for i in range(len(dataset)) if dataset[i]["extra_info"]["task"]["name"] == name]
    return DataProto.from_single_dict(collate_fn(rows))


def _batches(config, data: Path, tokenizer, names: list[str]):
    """Several rows, in `names` order, as one batch."""
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    dataset = RLHFDataset([str(data)], tokenizer, config.data)
    by_name = {dataset[i]["extra_info"]["task"]["name"]: dataset[i] for i in range(len(dataset))}
    return DataProto.from_single_dict(collate_fn([by_name[n] for n in names]))


def _run(config, server, batch):
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    async def go():
        worker = AgentLoopWorker(config, llm_client=server)
        return await worker.generate_sequences(batch)

    return asyncio.run(go())


def _episode_env(monkeypatch, tmp_path: Path, url: str, **extra: str) -> None:
    monkeypatch.setenv("CUDA_AGENT_JUDGE_URL", url)
    monkeypatch.setenv("CUDA_AGENT_JUDGE_TOKEN", TOKEN)
    monkeypatch.setenv("CUDA_AGENT_ROLLOUT_DIR", str(tmp_path / "rollouts"))
    monkeypatch.setenv("CUDA_AGENT_KEEP_WORKSPACES", "true")
    monkeypatch.setenv("CUDA_AGENT_ISOLATION", "auto")
    for key, value in extra.items():
        monkeypatch.setenv(key, value)


def _segments(mask: list[int]) -> list[tuple[int, int, int]]:
    """(value, start, end) runs of the response mask."""
    runs: list[tuple[int, int, int]] = []
    for i, m in enumerate(mask):
        if runs and runs[-1][0] == m:
            runs[-1] = (m, runs[-1][1], i + 1)
        else:
            runs.append((m, i, i + 1))
    return runs


def test_a_full_episode_through_verl_agent_loop(stage4, tokenizer, tmp_path, monkeypatch) -> None:
    replies = [
        "I will write the kernel, its binding and ModelNew.\n"
        + tool_call("Write", file_path="kernels/relu.cu", content=KERNEL) + "\n"
        + tool_call("Write", file_path="kernels/relu_binding.cpp", content=BINDING) + "\n"
        + tool_call("Write", file_path="model_new.py", content=MODEL_NEW),
        tool_call("Bash", command="ls kernels && wc -l model.py"),
        tool_call("Bash", command=LONG_OUTPUT),
        "Done: ReLU as one CUDA kernel.",
    ]
    server = ScriptedServerManager(tokenizer, replies)
    executor = KnownVerdictExecutor()
    with judge_server(tmp_path, executor) as url:
        _episode_env(monkeypatch, tmp_path, url)
        out = _run(stage4["config"], server, _batch(stage4["config"], stage4["data"], tokenizer, "relu"))

    assert len(server.calls) == 4 and not server.replies, "the episode did not run all four turns"
    assert len({c["request_id"] for c in server.calls}) == 1, "one episode, one sticky request id"
    batch, extra = out.batch, out.non_tensor_batch
    attention = batch["attention_mask"][0].tolist()
    prompt_width = batch["prompts"].shape[1]
    prompt_ids = batch["prompts"][0][[bool(a) for a in attention[:prompt_width]]].tolist()
    valid = sum(attention[prompt_width:])
    response_ids = batch["responses"][0][:valid].tolist()
    mask = batch["response_mask"][0][:valid].tolist()
    assert batch["response_mask"][0][valid:].sum() == 0, "padding is not trained on"

    # prompt ids: what the server was first sent, the opening messages of `solve` with the ten tools
    assert prompt_ids == server.calls[0]["prompt_ids"]
    prompt_text = tokenizer.decode(prompt_ids)
    assert prompt_text.startswith("<|im_start|>system\n") and prompt_text.endswith("<|im_start|>assistant\n")
    for name in ("Bash", "BashOutput", "KillBash", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep",
                 "NotebookEdit"):  # fmt: skip
        assert f'"name": "{name}"' in prompt_text
    assert "return torch.relu(x)" in prompt_text and "Task `relu`" in prompt_text

    # token in, token out: every request is the prompt plus the response so far, model tokens verbatim
    runs = _segments(mask)
    model_runs = [(s, e) for m, s, e in runs if m == 1]
    tool_runs = [(s, e) for m, s, e in runs if m == 0]
    assert [response_ids[s:e] for s, e in model_runs] == server.sent
    assert len(tool_runs) == 3, runs
    for turn, call in enumerate(server.calls[1:], start=1):
        assert call["prompt_ids"] == prompt_ids + response_ids[: tool_runs[turn - 1][1]]
    assert all(c["sampling_params"]["max_tokens"] <= 8192 for c in server.calls)

    # the tool tokens (mask 0) are our tools' results, rendered as tool turns, not cut to 256 characters
    tool_texts = [tokenizer.decode(response_ids[s:e]) for s, e in tool_runs]
    assert all("<tool_response>" in t for t in tool_texts)
    assert tool_texts[0].count("<tool_response>") == 3  # three Write results after one assistant turn
    assert "relu.cu" in tool_texts[1] and "relu_binding.cpp" in tool_texts[1]
    assert "line 1: the quick" in tool_texts[2] and "line 900: the quick brown fox" in tool_texts[2]
    assert len(tool_texts[2]) > 25_000

    # log probs: the server's for model tokens, 0 for tool tokens
    logprobs = batch["rollout_log_probs"][0][:valid].tolist()
    assert [round(logprobs[s], 4) for s, _ in model_runs] == [-0.01] * 4
    assert all(logprobs[i] == 0.0 for s, e in tool_runs for i in range(s, e))

    # turns: the task message, 4 replies, 3 batches of tool results
    assert extra["__num_turns__"][0] == 8

    # reward: the judge server's verdict on the files the tools wrote, on the last response token
    assert executor.received == [{"kernels/relu.cu": KERNEL, "kernels/relu_binding.cpp": BINDING,
                                  "model_new.py": MODEL_NEW}]  # fmt: skip
    scores = batch["rm_scores"][0]
    assert scores[valid - 1].item() == 3.0 and scores.sum().item() == 3.0
    assert extra["status"][0] == "ok" and extra["judged"][0]
    assert extra["speedup_vs_compile"][0] == pytest.approx(1.6) and extra["speedup_vs_eager"][0] == pytest.approx(3.1)
    record = extra["cuda_agent"][0]
    assert record["exit"] == "finished" and record["assistant_turns"] == 4 and record["tool_calls"] == 5
    assert record["tool_statuses"] == {"ok": 5}
    workspace = Path(record["workspace"])
    assert (workspace / "model_new.py").read_text() == MODEL_NEW


def test_a_judge_that_is_down_gives_no_reward_and_says_why(stage4, tokenizer, tmp_path, monkeypatch,
                                                            caplog) -> None:  # fmt: skip
    """The turn budget ends the episode; the judge server is not there: reward 0 (the default
    failure_reward), judged False, the reason logged; nothing raises."""
    server = ScriptedServerManager(tokenizer, [tool_call("Write", file_path="model_new.py", content=MODEL_NEW),
                                               "never asked for"])  # fmt: skip
    _episode_env(monkeypatch, tmp_path, closed_port_url(), CUDA_AGENT_MAX_TURNS="1")
    caplog.set_level(logging.WARNING, logger="cuda_agent.train.verl")
    out = _run(stage4["config"], server, _batch(stage4["config"], stage4["data"], tokenizer, "relu"))
    assert len(server.calls) == 1
    extra = out.non_tensor_batch
    assert extra["cuda_agent"][0]["exit"] == "turn_limit"
    assert out.batch["rm_scores"][0].sum().item() == 0.0
    assert extra["status"][0] == "unavailable" and not extra["judged"][0] and extra["milestone"][0] is None
    assert "cannot reach the judge" in extra["reason"][0]
    assert any("no verdict for task relu" in r.getMessage() for r in caplog.records)
    # no verdict, no reward: the model's tokens are there, and no loss reads any of them
    valid = int(out.batch["attention_mask"][0][out.batch["prompts"].shape[1]:].sum())
    assert valid >= len(server.sent[0]) and out.batch["response_mask"][0].sum().item() == 0


def test_a_stuck_judge_times_out_and_the_context_budget_holds(stage4, tokenizer, tmp_path, monkeypatch) -> None:
    """A judge that accepts the judgment but never answers is given up on after the timeout, scored with
    the configured failure_reward; the 131k default is lowered so the long Read result cannot fit."""
    server = ScriptedServerManager(tokenizer, [tool_call("Bash", command=LONG_OUTPUT), "never asked for"])
    executor = KnownVerdictExecutor(hang=True)
    with judge_server(tmp_path, executor) as url:
        _episode_env(monkeypatch, tmp_path, url, CUDA_AGENT_JUDGE_TIMEOUT_S="2", CUDA_AGENT_FAILURE_REWARD="-0.5",
                     CUDA_AGENT_CONTEXT_TOKENS="14000")  # fmt: skip
        out = _run(stage4["config"], server, _batch(stage4["config"], stage4["data"], tokenizer, "relu"))
    extra = out.non_tensor_batch
    assert extra["cuda_agent"][0]["exit"] == "context_limit"
    assert len(server.calls) == 1 and len(executor.received) == 1
    assert extra["status"][0] == "timeout" and "within 2 s" in extra["reason"][0]
    assert out.batch["rm_scores"][0].sum().item() == -0.5  # in the reward slot, read by no loss:
    assert out.batch["response_mask"][0].sum().item() == 0
    prompt_width = out.batch["prompts"].shape[1]
    used = int(out.batch["attention_mask"][0].sum())
    assert len(server.sent[0]) < used - int(out.batch["attention_mask"][0][:prompt_width].sum()) + 1
    assert used <= 14000


def _tampered(data: Path, out: Path) -> Path:
    """The converter's rows plus a copy of the first whose task source no longer matches its digest: a row
    the agent loop raises on before it has a prompt (`task_from_extra_info`)."""
    import pyarrow.parquet as pq

    from cuda_agent.train.verl.data import write_rows

    rows = pq.read_table(data).to_pylist()
    bad = {**rows[0], "extra_info": {**rows[0]["extra_info"], "index": len(rows),
                                     "task": {**rows[0]["extra_info"]["task"], "name": "tampered",
                                              "source": TASK_SOURCE.replace("relu", "relu6")}}}  # fmt: skip
    write_rows([*rows, bad], out)
    return out


def test_an_episode_that_raises_is_a_masked_sample_and_the_step_goes_on(stage4, tokenizer, tmp_path,
                                                                         monkeypatch, caplog) -> None:  # fmt: skip
    """Two rows in one batch: a good episode, judged; and a row whose `run()` raises before it has a prompt.
    verl gets both samples back (an exception in `run()` used to end the whole step); the broken one is
    masked out of the loss, says why, and is counted by the step's metrics."""
    from cuda_agent.train.unjudged import unjudged_metrics

    data = _tampered(stage4["data"], tmp_path / "rows.parquet")
    server = ScriptedServerManager(tokenizer, ["Nothing to change: done."])
    caplog.set_level(logging.ERROR, logger="cuda_agent.train.verl")
    with judge_server(tmp_path, KnownVerdictExecutor()) as url:
        _episode_env(monkeypatch, tmp_path, url)
        batch = _batches(stage4["config"], data, tokenizer, ["relu", "tampered"])
        out = _run(stage4["config"], server, batch)

    extra = out.non_tensor_batch
    names = [r["task"]["name"] for r in extra["extra_info"]]
    good, bad = names.index("relu"), names.index("tampered")
    assert extra["status"][good] == "ok" and extra["judged"][good] and out.batch["response_mask"][good].sum() > 0
    assert extra["status"][bad] == "rollout_error" and not extra["judged"][bad]
    assert "TaskError" in extra["reason"][bad] and "digest" in extra["reason"][bad]
    assert out.batch["response_mask"][bad].sum().item() == 0
    assert extra["cuda_agent"][bad]["exit"] == "error"
    # its prompt is the row's own messages (copied from relu's row), as the chat template renders them
    width = out.batch["prompts"].shape[1]
    prompt = tokenizer.decode(out.batch["prompts"][bad][out.batch["attention_mask"][bad][:width].bool()])
    assert prompt.startswith("<|im_start|>system\n") and "Task `relu`" in prompt
    assert any("the episode of task tampered raised" in r.getMessage() for r in caplog.records)
    metrics = unjudged_metrics(extra["reward_extra_info"])
    assert metrics["cuda_agent/samples_total"] == 2 and metrics["cuda_agent/unjudged_total"] == 1
    assert metrics["cuda_agent/unjudged_total/rollout_error"] == 1 and metrics["cuda_agent/unjudged_fraction"] == 0.5


def test_a_rollout_server_that_fails_mid_episode_masks_what_was_generated(stage4, tokenizer, tmp_path,
                                                                          monkeypatch) -> None:  # fmt: skip
    """The rollout engine raises on the second turn (a replica that died): the first turn's tokens and the
    tool's result stay in the sample, all masked, with log-probabilities aligned to them; nothing is judged."""
    server = ScriptedServerManager(tokenizer, [tool_call("Bash", command="echo hi")])  # then it raises
    executor = KnownVerdictExecutor()
    with judge_server(tmp_path, executor) as url:
        _episode_env(monkeypatch, tmp_path, url, CUDA_AGENT_MAX_TURNS="3")
        out = _run(stage4["config"], server, _batch(stage4["config"], stage4["data"], tokenizer, "relu"))
    extra = out.non_tensor_batch
    assert extra["status"][0] == "rollout_error" and "more turns than were scripted" in extra["reason"][0]
    assert executor.received == [], "a broken episode is not judged"
    prompt_width = out.batch["prompts"].shape[1]
    valid = int(out.batch["attention_mask"][0][prompt_width:].sum())
    response = out.batch["responses"][0][:valid].tolist()
    assert response[: len(server.sent[0])] == server.sent[0] and "hi" in tokenizer.decode(response[len(server.sent[0]):])
    assert out.batch["response_mask"][0].sum().item() == 0
    assert out.batch["rollout_log_probs"][0][: len(server.sent[0])].tolist() == pytest.approx(
        [-0.01 * (i % 7 + 1) for i in range(len(server.sent[0]))])  # fmt: skip
