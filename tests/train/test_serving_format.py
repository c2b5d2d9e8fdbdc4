"""Training rows render exactly what the model server renders: the same token ids, turn after turn.

The tiny model served by `transformers serve` reproduced its first turn and then went off the rails:
its training rows had been made from a trajectory file, whose sorted keys had reordered every tool
schema, so the system prompt it learned was not the one the server showed it. These tests take a
real episode, the requests the agent sent to the server, and the row `rft-data` made of the episode,
and render both through the same chat template the way each side does (TRL: the row's messages and
tools; transformers serve: the request's messages through its own OpenAI-to-template conversion and
the request's tools, with the generation prompt): each request must be a prefix of the training row.
"""

from __future__ import annotations

import json

import pytest
from train_helpers import KERNEL, judged, play, served_script, write_jsonl

from cuda_agent.cli import main
from cuda_agent.train.chat import chat_tools, served_order
from cuda_agent.train.masks import render
from cuda_agent.train.rft_data import read_rows


def served_ids(tokenizer, request: dict) -> list[int]:
    """The prompt `transformers serve` builds for one chat-completion request (its own code path)."""
    pytest.importorskip("fastapi")
    from transformers.cli.serving.utils import BaseHandler, Modality

    messages = BaseHandler.get_processor_inputs_from_messages(request["messages"], Modality.LLM)
    return tokenizer.apply_chat_template(messages, tools=request.get("tools"), add_generation_prompt=True,
                                         tokenize=True, return_dict=True)["input_ids"]  # fmt: skip


def test_every_served_turn_is_a_prefix_of_the_training_row(tiny_model, tmp_path) -> None:
    from transformers import AutoTokenizer

    requests: list[dict] = []
    record = play(tmp_path / "episode", KERNEL, served_script(KERNEL), requests)
    runs = write_jsonl(tmp_path / "runs.jsonl", [judged(record, 2)])
    out = tmp_path / "sft.parquet"
    assert main(["train", "rft-data", str(runs), "--out", str(out)]) == 0
    row = read_rows(out)[0]
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    trained = render(tokenizer, row["messages"], row["tools"])["input_ids"]
    assert len(requests) == 3  # Read, the two Writes, the final text
    for turn, request in enumerate(requests, 1):
        served = served_ids(tokenizer, request)
        same = next((i for i, (a, b) in enumerate(zip(served, trained, strict=False)) if a != b), len(served))
        assert same == len(served), (f"turn {turn}: the served prompt leaves the training row at token {same}: "
                                     f"{tokenizer.decode(served[same:same + 30])!r} vs "
                                     f"{tokenizer.decode(trained[same:same + 30])!r}")  # fmt: skip
    # and what the row trains after the last request's prompt is the last answer, then the end
    assert tokenizer.decode(trained[len(served_ids(tokenizer, requests[-1])):]) == "Done: a ReLU kernel — écrit.<|im_end|>\n"

    # the trajectory file's sorted keys alone would have broken it: equal schemas, printed in another order
    from_file = chat_tools(record["tools"])
    assert from_file == requests[0]["tools"] and json.dumps(from_file) != json.dumps(requests[0]["tools"])
    assert json.dumps(json.loads(row["tools"])) == json.dumps(requests[0]["tools"])


def test_served_order_restores_key_order_and_keeps_values() -> None:
    reference = {"type": "function", "function": {"name": "T", "description": "old", "parameters": {
        "type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}, "required": ["b"]}}}
    record = json.loads(json.dumps(reference, sort_keys=True))
    record["function"]["description"] = "written for this sandbox"
    record["function"]["parameters"]["properties"]["c"] = {"type": "boolean"}  # unknown to the reference: kept, last
    restored = served_order(record, reference)
    assert list(restored["function"]) == ["name", "description", "parameters"]
    assert list(restored["function"]["parameters"]["properties"]) == ["b", "a", "c"]
    assert restored["function"]["description"] == "written for this sandbox" and restored == record
    assert chat_tools([record], reference=[reference]) == [restored]
    assert served_order(["x"], None) == ["x"] and served_order(3, {"a": 1}) == 3
