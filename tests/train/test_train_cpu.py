"""A few real CPU steps of `train sft` (TRL) and `train value` (HF Trainer) on the tiny model, the value
targets and masks, and the tiny model's tool calls read back by transformers' own response parser."""

from __future__ import annotations

import copy
import inspect
import json
import math
import re

import pytest
import torch
from train_helpers import judged, write_jsonl

from cuda_agent.cli import main
from cuda_agent.train.rft_data import read_rows
from cuda_agent.train.value import (
    ValueCollator,
    masked_mse,
    split_episodes,
    split_kind,
    state_positions,
    value_example,
)


def shortened(record: dict) -> dict:
    out = copy.deepcopy(record)
    out["messages"][0]["content"] = "You write CUDA kernels."
    out["messages"][1]["content"] = "Make torch.relu fast."
    out["tools"] = [t for t in out["tools"] if t["function"]["name"] in ("Read", "Write")]
    return out


@pytest.fixture(scope="module")
def data(records, tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    # Short conversations keep CPU steps fast: a one-line system prompt and the two tools the episode used.
    short = {k: shortened(r) for k, r in records.items()}
    episodes = [judged(short["a"], 2), judged(short["b"], -1, "incorrect"),
                judged(short["a"], 2), judged(short["b"], -1, "compile_error")]  # fmt: skip
    runs = write_jsonl(root / "runs.jsonl", episodes)
    out = root / "mix.parquet"
    assert main(["train", "rft-data", str(runs), "--out", str(out), "--min-reward", "-1", "--keep-duplicates"]) == 0
    return out


def test_value_targets_and_masks(data, tiny_model) -> None:
    from transformers import AutoTokenizer

    from cuda_agent.train.masks import render

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    rows = read_rows(data)
    for row in rows:
        example = value_example(tokenizer, row, None)
        rendered = render(tokenizer, row["messages"], row["tools"])
        # the targets sit at the states before each assistant token (test_value.py has the details)
        assert example["value_mask"] == state_positions(rendered["assistant_masks"])
        assert example["value_target"] == row["reward"]
    short = value_example(tokenizer, rows[0], 50)
    assert len(short["input_ids"]) == len(short["value_mask"]) == 50

    best, failed = (next(r for r in rows if r["reward"] == v) for v in (2.0, -1.0))
    assert len(json.loads(failed["tools"])) == 2
    a, b = value_example(tokenizer, best, None), value_example(tokenizer, failed, 40)
    batch = ValueCollator(pad_id=tokenizer.pad_token_id)([a, b])
    width = len(a["input_ids"])
    assert batch["input_ids"].shape == (2, width) and batch["attention_mask"][1].sum() == 40
    assert batch["value_mask"][1, 40:].sum() == 0 and batch["value_mask"][0].sum() == sum(a["value_mask"])
    assert torch.all(batch["value_targets"][1] == -1.0) and torch.all(batch["value_targets"][0] == 2.0)
    # the loss counts masked tokens only
    values = torch.zeros(2, width)
    assert math.isclose(float(masked_mse(values, batch["value_targets"], batch["value_mask"])),
                        (4 * sum(a["value_mask"]) + 1 * sum(b["value_mask"])) / (sum(a["value_mask"]) + sum(b["value_mask"])),
                        rel_tol=1e-6)  # fmt: skip

    train, held = split_episodes(rows, 0.5, seed=0)
    assert len(train) + len(held) == 4 and {r["reward"] for r in held} == {r["reward"] for r in train} == {2.0, -1.0}
    one_success = [rows[0], *(r for r in rows if r["reward"] == -1.0)]
    train, held = split_episodes(one_success, 0.3, seed=0)
    assert [r["reward"] for r in held] == [-1.0] and sorted(r["reward"] for r in train) == [-1.0, 2.0]
    levels = [{**rows[0], "reward": 1.0}, {**rows[0], "reward": 2.0}, *(r for r in rows if r["reward"] == -1.0)]
    _, held = split_episodes(levels, 0.3, seed=0)  # rewards 1 and 2 are both successes: one is held out
    assert sorted(r["reward"] > 0 for r in held) == [False, True]
    with pytest.raises(ValueError, match="at least 2"):
        split_episodes(rows[:1], 0.5, 0)


def test_sft_steps_on_cpu(data, tiny_model, tmp_path, capsys) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path / "sft"
    code = main(["train", "sft", "--data", str(data), "--model", str(tiny_model), "--out", str(out), "--max-steps", "4",
                 "--lr", "3e-3", "--batch-size", "2", "--no-bf16", "--no-gradient-checkpointing", "--json"])  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["steps"] == 4 and math.isfinite(summary["train_loss"])
    assert summary["last_loss"] < summary["first_loss"], summary["loss_curve"]
    assert (out / "sft_loss.png").stat().st_size > 1000
    model = AutoModelForCausalLM.from_pretrained(out)
    assert AutoTokenizer.from_pretrained(out).chat_template is not None
    assert model.config.model_type == "qwen2"


def test_sft_and_value_run_on_a_template_without_generation_markers(data, tiny_model, tmp_path, capsys) -> None:
    """The stock templates of Qwen3, Llama 3 and most open models have no `{% generation %}` markers, and
    the SFT stage saves the template as it is: both stages must train on such a model (they refused it)."""
    import shutil

    from transformers import AutoTokenizer

    from cuda_agent.train.masks import render

    model = tmp_path / "plain"
    shutil.copytree(tiny_model, model)
    tokenizer = AutoTokenizer.from_pretrained(model)
    marked = tokenizer.chat_template
    tokenizer.chat_template = marked.replace("{%- generation -%}", "").replace("{%- endgeneration -%}", "")
    assert "generation -%}" not in tokenizer.chat_template
    tokenizer.save_pretrained(model)
    row = read_rows(data)[0]
    theirs = AutoTokenizer.from_pretrained(tiny_model).apply_chat_template(
        row["messages"], tools=json.loads(row["tools"]), tokenize=True, return_dict=True,
        return_assistant_tokens_mask=True)  # fmt: skip
    assert render(tokenizer, row["messages"], row["tools"])["assistant_masks"] == list(theirs["assistant_masks"])
    for stage in ("sft", "value"):
        code = main(["train", stage, "--data", str(data), "--model", str(model), "--out", str(tmp_path / stage),
                     "--max-steps", "2", "--no-bf16", "--json"])  # fmt: skip
        captured = capsys.readouterr()
        assert code == 0, (stage, captured.err[-2000:])
        assert json.loads(captured.out)["steps"] == 2


def test_a_max_length_that_leaves_nothing_to_train_on_is_one_line(data, tiny_model, tmp_path, capsys) -> None:
    """--max-length below the first assistant token: one line naming the length that would do, not the
    sampler's "num_samples=0" from inside the trainer (sft) or a critic trained on no target (value)."""
    from transformers import AutoTokenizer

    from cuda_agent.train.masks import first_assistant_token

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    earliest = min(first_assistant_token(tokenizer, r["messages"], r["tools"]) for r in read_rows(data))
    assert earliest > 20
    for stage in ("sft", "value"):
        code = main(["train", stage, "--data", str(data), "--model", str(tiny_model), "--out", str(tmp_path / stage),
                     "--max-length", "20", "--max-steps", "1", "--no-bf16"])  # fmt: skip
        err = capsys.readouterr().err
        line = r"error: --max-length 20 cuts all [24] conversation\(s\) before their first assistant token \(the earliest "
        assert code == 2 and re.search(line, err) and f"pass --max-length above {earliest}" in err, (stage, err[-2000:])
        # (value splits off held-out episodes: it checks the 2 it trains on)
        assert len([ln for ln in err.splitlines() if "error" in ln.lower()]) == 1
        assert "Traceback" not in err and "num_samples" not in err
    assert main(["train", "sft", "--data", str(data), "--model", str(tiny_model), "--out", str(tmp_path / "n"),
                 "--max-length", "0"]) == 2  # fmt: skip
    assert "--max-length must be at least 1" in capsys.readouterr().err


def test_the_readme_states_the_default_tiny_models_size(tmp_path) -> None:
    from pathlib import Path

    from cuda_agent.train.tiny import build_tiny_model

    info = build_tiny_model(tmp_path / "tiny")
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    stated = re.search(r"random-init Qwen2 weights \(about (\d+)M parameters by default: its BPE learns about "
                       r"([\d,]+)\s+tokens", readme)  # fmt: skip
    # To the million: the vocabulary the BPE learns (and so the embedding) grows with SKILL.md and the
    # prompts (13.9M when SKILL.md was shorter, 14.3M at 3,323 tokens), and the README says so.
    assert stated and int(stated.group(1)) == round(info["parameters"] / 1e6), info
    tokens = int(stated.group(2).replace(",", ""))
    assert abs(info["vocab_size"] - tokens) <= 0.2 * tokens, info


def test_value_steps_on_cpu(data, tiny_model, tmp_path, capsys) -> None:
    from transformers import AutoModelForTokenClassification

    out = tmp_path / "critic"
    code = main(["train", "value", "--data", str(data), "--model", str(tiny_model), "--out", str(out), "--max-steps",
                 "4", "--lr", "1e-3", "--eval-fraction", "0.5", "--no-bf16", "--json"])  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["steps"] == 4 and summary["heldout_episodes"] >= 1
    # the split is by episode and reported; the head starts at the mean target of the training tokens
    split = summary["split"]
    assert len(split["train"]) == summary["train_episodes"] and len(split["heldout"]) == summary["heldout_episodes"]
    assert sorted(split["heldout_rewards"]) == [-1.0, 2.0]
    assert -1.0 < summary["head_bias"] < 2.0
    per_episode = summary["heldout_after"]["per_episode"]
    assert sorted(e["target"] for e in per_episode) == sorted(split["heldout_rewards"])
    for key in ("value_loss", "explained_variance"):
        assert math.isfinite(summary["heldout_after"][key])
    critic = AutoModelForTokenClassification.from_pretrained(out)
    assert critic.config.num_labels == 1
    assert critic(input_ids=torch.tensor([[1, 2, 3]])).logits.shape == (1, 3, 1)


def test_value_refuses_one_sided_data(records, tiny_model, tmp_path, capsys) -> None:
    runs = write_jsonl(tmp_path / "ok.jsonl", [judged(records["a"], 2), judged(records["b"], 2)])
    data = tmp_path / "ok.parquet"
    assert main(["train", "rft-data", str(runs), "--out", str(data)]) == 0
    assert main(["train", "value", "--data", str(data), "--model", str(tiny_model), "--out", str(tmp_path / "c")]) == 2
    assert "successes AND failures" in capsys.readouterr().err


def test_transformers_reads_the_tiny_models_tool_calls(data, tiny_model) -> None:
    """What the template trains the model to emit is what `transformers serve` parses into tool_calls."""
    pytest.importorskip("fastapi")
    from transformers import AutoConfig, AutoTokenizer
    from transformers.cli.serving.utils import get_response_template

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    config = AutoConfig.from_pretrained(tiny_model)

    class Model:  # transformers before 5.x read the model's config; later ones take the config itself
        pass

    Model.config = config  # type: ignore[attr-defined]
    takes_config = "config" in inspect.signature(get_response_template).parameters
    template = get_response_template(tokenizer, config if takes_config else Model())
    assert template is not None
    messages = read_rows(data)[0]["messages"]
    turn = 4  # the assistant turn with two Write calls
    assert messages[turn]["role"] == "assistant" and len(messages[turn]["tool_calls"]) == 2
    prompt = tokenizer.apply_chat_template(messages[:turn], tokenize=False, add_generation_prompt=True)
    full = tokenizer.apply_chat_template(messages[: turn + 1], tokenize=False)
    assert full.startswith(prompt)
    parsed = tokenizer.parse_response(full[len(prompt):].rstrip("\n"), template, prefix=prompt)
    calls = parsed["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["Write", "Write"]
    assert [c["function"]["arguments"] for c in calls] == [json.loads(c["function"]["arguments"])
                                                           for c in messages[turn]["tool_calls"]]  # fmt: skip


def test_held_out_episodes_are_whole_tasks() -> None:
    """Episodes of one task share their prompt and most turns: a task on both sides of the split lets the
    critic score held-out episodes from memory. 10 tasks of 2-5 episodes, mixed outcomes."""
    import random

    rng = random.Random(1)
    rows = [{"task": f"t{t}", "reward": rng.choice([-1.0, 1.0, 2.0]), "n": i}
            for t in range(10) for i in range(rng.randint(2, 5))]  # fmt: skip
    assert split_kind(rows) == "task"
    for seed in range(20):
        train, held = split_episodes(rows, 0.25, seed)
        assert len(train) + len(held) == len(rows)
        assert not {r["task"] for r in train} & {r["task"] for r in held}
        assert {r["reward"] > 0 for r in held} == {r["reward"] > 0 for r in train} == {True, False}
        assert 0.1 * len(rows) <= len(held) <= 0.5 * len(rows)
    assert split_episodes(rows, 0.25, 3) == split_episodes(rows, 0.25, 3)
    # two tasks: one held out, one trained on, whatever the fraction
    two = [{"task": "a", "reward": 1.0}, {"task": "a", "reward": -1.0}, {"task": "b", "reward": -1.0}]
    train, held = split_episodes(two, 0.9, 0)
    assert len({r["task"] for r in train}) == len({r["task"] for r in held}) == 1
    # one task, or unnamed ones: by episode, and said so
    assert split_kind([{"task": "a", "reward": 1.0}, {"task": "a", "reward": -1.0}]) == "episode"
    assert split_kind([{"reward": 1.0}, {"task": "b", "reward": -1.0}]) == "episode"
