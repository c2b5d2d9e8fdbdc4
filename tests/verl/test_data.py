"""Tasks -> verl RL parquet: Ops-6K and synth parquet, task folders and a KernelBench checkout, read back
by verl's own RLHFDataset (with prompt-length filtering through the tiny tokenizer's chat template)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("verl.utils.dataset", reason="needs verl: these tests run in .venv-verl (bash scripts/setup_verl.sh)")

from verl_helpers import TASK_SOURCE

from cuda_agent.task import TaskError
from cuda_agent.train.single_turn import single_turn_messages
from cuda_agent.train.verl.data import AGENT, SINGLE_TURN, convert, task_from_extra_info

SCALE = TASK_SOURCE.replace("torch.relu(x)", "x * 2.0")


def _ops6k(path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"code": TASK_SOURCE, "ops": json.dumps(["torch.relu"]), "data_source": "torch#1"},
            {"code": SCALE, "ops": json.dumps(["torch.mul"]), "data_source": "torch#1"},
            {"code": "def broken(:\n", "ops": "[]", "data_source": "torch#1"}]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


# The tiny test tokenizer (a 1,024-token BPE) spends about 2 characters a token where a real one spends about
# 4, and the prompt carries SKILL.md (21 KB): its limit is twice the recipes' 8,192.
def _verl_rows(path: Path, tokenizer, max_prompt_length: int = 16384) -> list[dict]:
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": max_prompt_length,
                               "filter_overlong_prompts": True, "filter_overlong_prompts_workers": 1,
                               "return_raw_chat": True, "truncation": "error"})  # fmt: skip
    dataset = RLHFDataset([str(path)], tokenizer, config)
    return [dataset[i] for i in range(len(dataset))]


def test_ops6k_parquet_to_single_turn_rows_verl_reads(tmp_path: Path, tokenizer) -> None:
    report = convert([_ops6k(tmp_path / "ops6k.parquet")], tmp_path / "out", fmt=SINGLE_TURN, val_size=1)
    assert report.written == {"train": 1, "val": 1} and report.read == 3
    assert len(report.skipped) == 1 and "syntax error" in report.skipped[0][1]
    rows = _verl_rows(tmp_path / "out" / "train.parquet", tokenizer) + _verl_rows(tmp_path / "out" / "val.parquet",
                                                                                   tokenizer)  # fmt: skip
    assert sorted(r["extra_info"]["ops"][0] for r in rows) == ["torch.mul", "torch.relu"]
    for r in rows:
        task = task_from_extra_info(r["extra_info"])
        assert r["agent_name"] == "cuda_agent_single_turn" and r["data_source"] == "cuda_agent/ops6k"
        assert r["raw_prompt"] == single_turn_messages(task)
        assert r["reward_model"] == {"style": "judge", "ground_truth": task.digest}


def test_synth_output_and_kernelbench_folders_to_agent_rows(tmp_path: Path, tokenizer) -> None:
    from cuda_agent.synth.dataset import write_parquet

    synth = write_parquet([{"code": SCALE, "ops": ["torch.mul"], "data_source": "torch#1", "name": "scale_chain"}],
                          tmp_path / "synth.parquet")  # fmt: skip
    bench = tmp_path / "KernelBench"
    for level, name, source in (("level1", "19_ReLU", TASK_SOURCE), ("level2", "7_Scale", SCALE)):
        (bench / level).mkdir(parents=True)
        (bench / level / f"{name}.py").write_text(source)
    report = convert([synth, bench], tmp_path / "out", fmt=AGENT)
    assert report.written == {"train": 3} and not report.skipped
    assert report.sources == {"cuda_agent/synth": 1, "cuda_agent/kernelbench/level1": 1,
                              "cuda_agent/kernelbench/level2": 1}  # fmt: skip
    rows = _verl_rows(tmp_path / "out" / "train.parquet", tokenizer)
    assert {r["extra_info"]["task"]["name"] for r in rows} == {"scale_chain", "19_ReLU", "7_Scale"}
    for r in rows:
        assert r["agent_name"] == "cuda_agent"
        system, user = r["raw_prompt"]
        assert system["role"] == "system" and "/workspace" in system["content"]
        assert user["role"] == "user" and task_from_extra_info(r["extra_info"]).source in user["content"]
    # verl drops rows whose rendered prompt exceeds data.max_prompt_length: none of these fit in 64 tokens
    assert _verl_rows(tmp_path / "out" / "train.parquet", tokenizer, max_prompt_length=64) == []


def test_a_tampered_row_is_refused(tmp_path: Path) -> None:
    convert([_ops6k(tmp_path / "ops6k.parquet")], tmp_path / "out", fmt=AGENT)
    import pyarrow.parquet as pq

    extra = pq.read_table(tmp_path / "out" / "train.parquet").to_pylist()[0]["extra_info"]
    extra["task"]["source"] = extra["task"]["source"].replace("def forward", "def forward_")
    with pytest.raises(TaskError, match="no forward"):
        task_from_extra_info(extra)
    extra["task"]["source"] = extra["task"]["source"].replace("def forward_", "def forward") + "\n# changed\n"
    with pytest.raises(TaskError, match="digest"):
        task_from_extra_info(extra)


def test_the_cli_writes_parquet_and_reports(tmp_path: Path, capsys) -> None:
    from cuda_agent.cli import main

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "relu.py").write_text(TASK_SOURCE)
    (tasks / "scale.py").write_text(SCALE)
    assert main(["train", "verl-data", str(tasks), "--out", str(tmp_path / "out"), "--format", "single_turn",
                 "--val-size", "1", "--json"]) == 0  # fmt: skip
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["written"] == {"train": 1, "val": 1} and report["data_sources"] == {"cuda_agent/tasks": 2}
    assert "cuda_agent/tasks" in captured.err and (tmp_path / "out" / "val.parquet").is_file()
    assert main(["train", "verl-data", str(tmp_path / "missing"), "--out", str(tmp_path / "o2")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_prompts_are_counted_with_the_tool_schemas_and_overlong_ones_filtered(tmp_path: Path, tiny_model: Path,
                                                                             tokenizer, capsys) -> None:  # fmt: skip
    """verl counts a row's messages only; the agent loop also renders ten tool schemas. The converter counts
    what the loop sends and skips (or refuses) a task over the limit, printing the counts."""
    from cuda_agent.cli import main
    from cuda_agent.train.verl.data import PromptLimit, prompt_for, prompt_tokens, prompt_tools

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "relu.py").write_text(TASK_SOURCE)
    (tasks / "long.py").write_text(TASK_SOURCE + "\n" + "".join(f"# padding line {i}: {'x' * 60}\n" for i in range(300)))
    relu = task_from_extra_info({"task": {"name": "relu", "source": TASK_SOURCE}})
    bare = prompt_tokens(tokenizer, prompt_for(relu, AGENT), None)
    counted = prompt_tokens(tokenizer, prompt_for(relu, AGENT), prompt_tools(AGENT))
    assert counted > bare + 1000, "the ten tool schemas are part of the prompt the loop sends"
    limit = counted + 50  # relu fits, the long task (about 10,000 more characters) does not

    report = convert([tasks], tmp_path / "out", fmt=AGENT, limit=PromptLimit(str(tiny_model), limit))
    assert report.written == {"train": 1}
    (where, why), = report.skipped
    assert where == "long" and why.startswith("prompt of ") and f"exceeds the limit of {limit}" in why
    assert report.prompt_tokens["longest_task"] == "long" and report.prompt_tokens["over"] == 1
    import pyarrow.parquet as pq

    assert [r["extra_info"]["task"]["name"] for r in pq.read_table(tmp_path / "out" / "train.parquet").to_pylist()] == ["relu"]

    with pytest.raises(ValueError, match=r"1 task prompt\(s\) exceed .* long \(\d+\)"):
        convert([tasks], tmp_path / "refused", fmt=AGENT, limit=PromptLimit(str(tiny_model), limit, "refuse"))
    assert not (tmp_path / "refused").exists()

    assert main(["train", "verl-data", str(tasks), "--out", str(tmp_path / "cli"), "--tokenizer", str(tiny_model),
                 "--max-prompt-tokens", str(limit)]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert f"limit {limit}, 1 over" in err and "prompt tokens (tool schemas included" in err
    assert main(["train", "verl-data", str(tasks), "--out", str(tmp_path / "cli2"), "--tokenizer", str(tiny_model),
                 "--max-prompt-tokens", str(limit), "--overlong", "refuse"]) == 2  # fmt: skip
    assert "exceed" in capsys.readouterr().err
