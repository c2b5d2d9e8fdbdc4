"""Value pretraining: the positions that carry targets are the states verl reads its critic at, the head
starts as the best constant, and a critic trained the way `train value` trains it tells held-out
successes from failures (explained variance > 0.5) on episodes like the device run's: the same
conversations reached by different routes, the outcome decided by the kernel the model writes.

The episodes are variants of a real recorded one (train_helpers: the agent loop, its tools and writer),
as the other training tests make them: the kernel of the Write turn is a careful one (the verdict +1) or
a hasty one that copies x (-1), and what comes before it (a Read of model.py or not, its wording) and
after it varies independently of the outcome.
"""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch
from train_helpers import judged, write_jsonl

from cuda_agent.cli import main
from cuda_agent.train.masks import render
from cuda_agent.train.rft_data import read_rows
from cuda_agent.train.value import (
    ValueCollator,
    evaluate_values,
    explained_variance,
    start_at_mean,
    state_positions,
    turn_index,
    value_example,
)

CAREFUL = """#include <cuda_runtime.h>
// y = max(x, 0), one thread per element
__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
"""
HASTY = """#include <cuda_runtime.h>
// placeholder for relu: copies x for now
__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
"""
OPENINGS = ("Reading the reference.", "First, the model.", "Let me look at model.py.", None)  # None: no Read turn
ENDINGS = ("Done.", "Finished: the kernel is written.", "That is all.")


def shortened(record: dict) -> dict:
    """A one-line system prompt and the two tools the episode used, without their descriptions: short
    conversations (about 500 tokens), fast CPU steps."""
    out = copy.deepcopy(record)
    out["messages"][0]["content"] = "You write CUDA kernels."
    out["messages"][1]["content"] = "Make torch.relu fast."
    out["tools"] = [{"type": "function", "function": {"name": t["function"]["name"], "description": "",
                     "parameters": {"type": "object", "properties": {}}}}
                    for t in out["tools"] if t["function"]["name"] in ("Read", "Write")]  # fmt: skip
    return out


def variant(record: dict, kernel: str, opening: str | None, ending: str, reward: int) -> dict:
    """The recorded episode with its kernel, its first turn and its last words replaced (one task: the
    held-out episodes are drawn by episode, `split.by` says so; whole tasks are held out where there are
    several, tests/train/test_train_cpu.py)."""
    out = shortened(record)
    messages = out["messages"]
    if opening is None:  # drop the Read turn and its result
        messages[2:4] = []
    else:
        messages[2]["content"] = opening
    write = next(m for m in messages if m["role"] == "assistant" and m.get("tool_calls")
                 and m["tool_calls"][0]["function"]["name"] == "Write")  # fmt: skip
    arguments = json.loads(write["tool_calls"][0]["function"]["arguments"])
    arguments["content"] = kernel
    write["tool_calls"][0]["function"]["arguments"] = json.dumps(arguments)
    messages[-1]["content"] = ending
    return judged(out, reward, "ok" if reward > 0 else "incorrect")


@pytest.fixture(scope="module")
def mixed(records, tmp_path_factory):
    """24 episodes, 12 careful (+1) and 12 hasty (-1), each outcome through the same 12 conversations."""
    root = tmp_path_factory.mktemp("value")
    episodes = [variant(records["a"], kernel, opening, ending, reward)
                for kernel, reward in ((CAREFUL, 1), (HASTY, -1))
                for opening in OPENINGS for ending in ENDINGS]  # fmt: skip
    runs = write_jsonl(root / "runs.jsonl", episodes)
    out = root / "value.parquet"
    assert main(["train", "rft-data", str(runs), "--out", str(out), "--min-reward", "-1", "--any-exit",
                 "--keep-duplicates"]) == 0  # fmt: skip
    return out


def test_targets_sit_where_verl_reads_the_critic(mixed, tiny_model) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    row = read_rows(mixed)[0]
    assistant = render(tokenizer, row["messages"], row["tools"])["assistant_masks"]
    example = value_example(tokenizer, row, None)
    mask = example["value_mask"]
    # position p carries a target iff token p + 1 is the assistant's (verl: values[:, -len-1:-1])
    assert len(mask) == len(assistant) and mask[-1] == 0
    assert all(mask[p] == assistant[p + 1] for p in range(len(mask) - 1))
    first = assistant.index(1)
    assert mask.index(1) == first - 1 and assistant[first - 1] == 0  # the state that has read the prompt
    assert sum(mask) == sum(assistant)  # one target per assistant token, each turn's shifted by one
    turns = turn_index(mask)
    assert max(turns) + 1 == sum(1 for m in row["messages"] if m["role"] == "assistant")
    assert all((t >= 0) == bool(m) for t, m in zip(turns, mask, strict=True))
    assert state_positions([0, 1, 1, 0, 1]) == [1, 1, 0, 1, 0]
    assert turn_index([1, 1, 0, 1, 0, 0, 1]) == [0, 0, -1, 1, -1, -1, 2]


def test_head_starts_at_the_best_constant(mixed, tiny_model) -> None:
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    examples = [value_example(tokenizer, r, None) for r in read_rows(mixed)]
    model = AutoModelForTokenClassification.from_pretrained(tiny_model, num_labels=1)
    mean = start_at_mean(model, examples)
    tokens = sum(sum(e["value_mask"]) for e in examples)
    assert math.isclose(mean, sum(sum(e["value_mask"]) * e["value_target"] for e in examples) / tokens, rel_tol=1e-9)
    result = evaluate_values(model, examples, ValueCollator(tokenizer.pad_token_id))
    # every position gets exactly the mean: the loss is the targets' variance, the explained variance 0
    targets = torch.tensor([e["value_target"] for e in examples for _ in range(sum(e["value_mask"]))])
    assert result["tokens"] == tokens
    assert math.isclose(result["value_loss"], float(((targets - mean) ** 2).mean()), rel_tol=1e-4)
    assert abs(result["explained_variance"]) < 1e-4
    assert [t["turn"] for t in result["by_turn"]] == list(range(len(result["by_turn"])))
    assert sum(t["positions"] for t in result["by_turn"]) == tokens


def test_explained_variance_is_the_standard_one() -> None:
    t = torch.tensor([1.0, 1.0, -1.0, -1.0])
    assert explained_variance(t.clone(), t) == 1.0
    assert explained_variance(torch.zeros(4), t) == 0.0
    assert math.isclose(explained_variance(t * 0.5, t), 1 - 0.25, rel_tol=1e-6)  # residual 0.5 t: Var 0.25
    assert explained_variance(t + 3.0, t) == 1.0  # an offset is not variance (what the loss is for)
    assert math.isnan(explained_variance(torch.zeros(2), torch.ones(2)))


def test_critic_tells_heldout_outcomes_apart(mixed, tiny_model, tmp_path, capsys) -> None:
    """`train value` as users run it, with batches that mix outcomes: held-out explained variance > 0.5."""
    from transformers import AutoModelForTokenClassification

    out = tmp_path / "critic"
    code = main(["train", "value", "--data", str(mixed), "--model", str(tiny_model), "--out", str(out), "--epochs",
                 "20", "--batch-size", "6", "--lr", "3e-3", "--warmup-steps", "3", "--eval-fraction", "0.25",
                 "--eval-every", "20", "--no-bf16", "--json"])  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    before, after = summary["heldout_before"], summary["heldout_after"]
    assert summary["heldout_episodes"] == 6 and sorted(summary["split"]["heldout_rewards"]) == [-1.0] * 3 + [1.0] * 3
    split = summary["split"]
    assert split["by"] == "episode"  # one task: held out by episode, as the summary says
    assert abs(before["explained_variance"]) < 1e-3  # the head starts at the mean
    assert after["explained_variance"] > 0.5, after
    assert after["value_loss"] < before["value_loss"]
    # once the kernel is written (the Write turn onwards) the critic separates the outcomes
    last = after["by_turn"][-1]["mean_value_by_target"]
    assert last["1"] > 0.5 and last["-1"] < -0.5, after["by_turn"]
    steps = [p["step"] for p in summary["heldout_curve"]]
    assert steps[0] == 0 and steps[-1] == summary["steps"] and len(steps) >= 3
    assert AutoModelForTokenClassification.from_pretrained(out).config.num_labels == 1


def test_checkpoints_resume_where_the_run_stopped(mixed, tiny_model, tmp_path, capsys) -> None:
    """--save-steps writes resumable checkpoints; --resume latest continues from the newest (optimizer,
    scheduler and step count included) instead of starting again; without a checkpoint, one line."""
    out = tmp_path / "critic"
    common = ["train", "value", "--data", str(mixed), "--model", str(tiny_model), "--out", str(out),
              "--batch-size", "4", "--lr", "1e-3", "--no-bf16", "--json", "--save-steps", "2"]  # fmt: skip
    assert main([*common, "--resume", "latest", "--max-steps", "2"]) == 2
    assert "no checkpoint-N folder" in capsys.readouterr().err
    assert main([*common, "--max-steps", "4"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["steps"] == first["steps_run"] == 4
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    assert main([*common, "--max-steps", "6", "--resume", "latest"]) == 0
    resumed = json.loads(capsys.readouterr().out)
    # the resumed run trained steps 5 and 6 only: steps 1-4 of its curve are the first run's, restored
    assert resumed["steps"] == 6 and resumed["steps_run"] == 2 and resumed["resumed"] == "latest"
    assert [s for s, _ in resumed["loss_curve"]] == [1, 2, 3, 4, 5, 6]
    assert resumed["loss_curve"][:4] == first["loss_curve"]
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-4", "checkpoint-6"]
    assert main([*common, "--max-steps", "2", "--resume", str(tmp_path)]) == 2
    assert "not a checkpoint folder" in capsys.readouterr().err
