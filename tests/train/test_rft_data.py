"""rft-data: every filter drops what it should (and only that), the parquet has the schema both trainers
read, the chat template renders every row, and the assistant mask is exactly the assistant's tokens."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from train_helpers import judged, write_jsonl

from cuda_agent.cli import main
from cuda_agent.train.masks import render


def test_filters_and_report(records, tmp_path, capsys) -> None:
    a, b = records["a"], records["b"]
    episodes = [
        judged(a, 3),                                   # kept: best of task relu
        judged(a, 2),                                   # same kernel as the kept one
        judged(b, 2),                                   # a distinct kernel, kept (no cap yet)
        judged(a, 1),                                   # reward below --min-reward 2
        judged(a, None, "unavailable"),                 # no GPU, no verdict
        judged(a, None, "judge_error"),
        judged(a, -1, "task_error"),                    # the task refused: no verdict on the episode
        judged(a, 3, state="running"),                  # crashed mid-episode
        judged(a, 3, exit={"status": "turn_limit", "message": ""}),
        "{not json",
    ]
    runs = write_jsonl(tmp_path / "runs.jsonl", episodes)
    out = tmp_path / "sft.parquet"
    assert main(["train", "rft-data", str(runs), "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["read"] == 10 and report["kept"] == 2
    assert report["dropped"] == {"duplicate_kernel": 1, "reward": 1, "no_verdict": 3, "unfinished": 1, "exit": 1,
                                 "unreadable": 1}
    assert "dropped: no_verdict" in captured.err and "kept per task: relu 2" in captured.err
    table = pq.read_table(out)
    assert sorted(table.column("reward").to_pylist()) == [2.0, 3.0]

    # --per-task 1 keeps the best one; --any-exit lets the turn-limited episode through
    assert main(["train", "rft-data", str(runs), "--out", str(out), "--per-task", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kept"] == 1 and report["dropped"]["per_task_cap"] == 1
    assert pq.read_table(out).column("reward").to_pylist() == [3.0]
    assert main(["train", "rft-data", str(runs), "--out", str(out), "--any-exit", "--min-reward", "-1",
                 "--keep-duplicates", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kept"] == 5 and "exit" not in report["dropped"] and "reward" not in report["dropped"]
    assert main(["train", "rft-data", str(runs), "--out", str(out), "--task", "other", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kept"] == 0 and report["dropped"] == {"task": 9, "unreadable": 1}


def test_bad_arguments_are_clear(tmp_path, capsys) -> None:
    assert main(["train", "rft-data", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "x.parquet")]) == 2
    assert "no such trajectory file" in capsys.readouterr().err
    assert main(["train", "sft", "--data", str(tmp_path / "none.parquet"), "--model", "m", "--out", str(tmp_path)]) == 2
    assert "rft-data" in capsys.readouterr().err


def test_rows_render_and_mask_exactly_the_assistant(records, tiny_model, tmp_path, capsys) -> None:
    from transformers import AutoTokenizer

    runs = write_jsonl(tmp_path / "runs.jsonl", [judged(records["a"], 2), judged(records["b"], -1, "incorrect")])
    out = tmp_path / "all.parquet"
    assert main(["train", "rft-data", str(runs), "--out", str(out), "--min-reward", "-1"]) == 0
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == 2
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    for row in rows:
        assert set(row) >= {"messages", "tools", "task", "reward"}
        tools = json.loads(row["tools"])
        assert [t["function"]["name"] for t in tools][:3] == ["Bash", "BashOutput", "KillBash"] and len(tools) == 10
        messages = row["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "tool",
                                                 "assistant"]
        rendered = render(tokenizer, messages, row["tools"])
        ids, mask = rendered["input_ids"], rendered["assistant_masks"]
        inside = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
        outside = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if not m])
        assert inside == "".join(expected_assistant(m) for m in messages if m["role"] == "assistant")
        for m in messages:
            if m["role"] != "assistant":
                assert m["content"] in outside
        assert '"name": "Grep"' in outside  # the tools are rendered (in the system turn)


def expected_assistant(message: dict) -> str:
    """What the model must produce for one assistant turn: text, then each call as <tool_call> JSON, then stop."""
    text = message["content"] or ""
    for index, call in enumerate(message["tool_calls"] or []):
        args = json.loads(call["function"]["arguments"])
        sep = "\n" if text or index else ""
        text += f'{sep}<tool_call>\n{{"name": "{call["function"]["name"]}", "arguments": {json.dumps(args, ensure_ascii=False)}}}\n</tool_call>'
    return text + "<|im_end|>"


def test_the_package_imports_no_training_engine() -> None:
    """The judge, agent and synthesis must work without TRL/transformers/datasets installed."""
    import subprocess
    import sys

    code = ("import sys, cuda_agent.train.sft, cuda_agent.train.value, cuda_agent.train.rft_data, "
            "cuda_agent.train.tiny, cuda_agent.train.single_turn, cuda_agent.commands.train; "
            "loaded = [m for m in ('trl', 'transformers', 'datasets', 'accelerate', 'tokenizers') if m in sys.modules]; "
            "print(loaded); sys.exit(1 if loaded else 0)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
