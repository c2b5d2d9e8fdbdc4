"""Pipeline runs (static-only and CPU-only), resumability, parquet output, the Ops-6K loader, CLI, LLM."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from cuda_agent.synth import DEFAULT_MIX
from cuda_agent.synth.astnorm import ast_digest
from cuda_agent.synth.dataset import load_ops6k, read_journal, write_parquet
from cuda_agent.synth.pipeline import Pipeline, PipelineConfig, quotas
from cuda_agent.task import Task


def test_quotas_follow_the_mix():
    q = quotas(DEFAULT_MIX, 6000)
    assert sum(q.values()) == 6000
    assert q["torch#2"] == 5028 and q["transformers"] == 72


@pytest.mark.slow
def test_static_run_of_2000_is_distinct_and_on_mix(catalog, tmp_path):
    # The session catalog crawls one transformers family (3 distinct layers), so the 2,000 are torch tasks
    # in the Ops-6K proportions; test_exhausted_bucket_stops covers a bucket that runs dry.
    mix = {b: v for b, v in DEFAULT_MIX.items() if b != "transformers"}
    cfg = PipelineConfig(out_dir=tmp_path, num_tasks=2000, mix=mix, execute=False, progress=False, seed=1)
    summary = Pipeline(cfg, catalog=catalog).run()
    records = [r for r in read_journal(tmp_path / "journal.jsonl") if r["status"] == "accepted"]
    assert len(records) == 2000
    digests = {ast_digest(r["code"]) for r in records}
    assert len(digests) / len(records) >= 0.95
    d = summary.to_json()
    for bucket, share in d["requested_mix"].items():
        assert abs(d["accepted_mix"][bucket] - share) <= 0.02
    assert (tmp_path / "tasks.parquet").is_file()


def test_exhausted_bucket_stops(catalog, tmp_path):
    cfg = PipelineConfig(
        out_dir=tmp_path, num_tasks=10, mix={"transformers": 1.0}, execute=False, progress=False, max_stale=15
    )
    summary = Pipeline(cfg, catalog=catalog).run()
    assert summary.total_accepted == 3  # LlamaRMSNorm, LlamaMLP, LlamaAttention: then only duplicates
    assert "transformers" in summary.exhausted


def test_resume_loses_nothing(catalog, tmp_path):
    mix = {"torch#1": 0.5, "torch#2": 0.5}
    first = Pipeline(
        PipelineConfig(out_dir=tmp_path, num_tasks=10, mix=mix, execute=False, progress=False),
        catalog=catalog,
    )
    first.run()
    before = [r for r in read_journal(tmp_path / "journal.jsonl") if r["status"] == "accepted"]
    # An interrupted write leaves a torn last line: it must be skipped, not crash the resume.
    with (tmp_path / "journal.jsonl").open("a") as fh:
        fh.write('{"status": "accep')
    second = Pipeline(
        PipelineConfig(out_dir=tmp_path, num_tasks=20, mix=mix, execute=False, progress=False),
        catalog=catalog,
    )
    assert second.summary.resumed == 10
    summary = second.run()
    after = [r for r in read_journal(tmp_path / "journal.jsonl") if r["status"] == "accepted"]
    assert summary.total_accepted == 20 and len(after) == 20
    assert {r["index"] for r in before} <= {r["index"] for r in after}
    assert len({r["index"] for r in after}) == 20  # the resumed run continued the numbering


@pytest.mark.slow
def test_cpu_only_run_executes_in_workers(catalog, tmp_path):
    mix = {"torch#1": 0.25, "torch#2": 0.75}
    cfg = PipelineConfig(
        out_dir=tmp_path,
        num_tasks=4,
        mix=mix,
        workers=2,
        cpu_only=True,
        compile=False,
        progress=False,
        task_timeout_s=60,
        max_minutes=2,
    )
    summary = Pipeline(cfg, catalog=catalog).run()
    assert summary.total_accepted >= 1
    recs = read_journal(tmp_path / "journal.jsonl")
    acc = [r for r in recs if r["status"] == "accepted"]
    assert all(r["timing"] == "skipped (cpu-only)" and r["device"] == "cpu" for r in acc)
    assert all(r.get("reason") for r in recs if r["status"] == "rejected")
    text = summary.format()
    assert "acceptance by stage" in text and "eager" in text


def test_parquet_loads_with_datasets_and_ops6k_loader(tmp_path):
    datasets = pytest.importorskip("datasets")
    code = (
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
        "def get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n"
    )
    recs = [
        {
            "code": code,
            "ops": ["torch.relu"],
            "data_source": "torch#1",
            "name": "a",
            "eager_ms": 1.5,
            "compile_ms": 1.0,
            "gpu": "H200",
            "device": "cuda",
            "timing": "measured",
            "log": [["eager", "ok"]],
        },
        {"code": code, "ops": ["nn.Conv2d", "torch.relu"], "data_source": "torch#2", "name": "b"},
    ]
    path = write_parquet(recs, tmp_path / "out.parquet")
    ds = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert ds.num_rows == 2
    assert {"code", "ops", "data_source", "eager_ms", "compile_ms", "gpu", "filter_log"} <= set(
        ds.column_names
    )
    assert json.loads(ds[1]["ops"]) == ["nn.Conv2d", "torch.relu"]
    tasks = load_ops6k(path)
    assert all(isinstance(t, Task) for t in tasks)
    assert tasks[1].metadata["ops"] == ["nn.Conv2d", "torch.relu"]
    assert tasks[0].metadata["data_source"] == "torch#1"


def test_ops6k_loader_accepts_published_layout(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    code = (
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
        "def get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n"
    )
    (tmp_path / "data").mkdir()
    pq.write_table(
        pa.table(
            {
                "code": [code, code],
                "ops": ['["mul"]', '["conv2d", "relu"]'],
                "data_source": ["torch#1", "torch#2"],
            }
        ),
        tmp_path / "data" / "train-00000-of-00001.parquet",
    )
    pq.write_table(
        pa.table({"code": [code], "ops": [["gelu", "add"]], "data_source": ["torch#2"]}),
        tmp_path / "list_ops.parquet",
    )
    tasks = load_ops6k(tmp_path / "data")
    assert [t.metadata["ops"] for t in tasks] == [["mul"], ["conv2d", "relu"]]
    assert tasks[0].name == "ops6k_00000" and tasks[0].source == code
    assert load_ops6k(tmp_path / "list_ops.parquet")[0].metadata["ops"] == ["gelu", "add"]


def test_cli_static_only(catalog, tmp_path, monkeypatch, capsys):
    import cuda_agent.synth.pipeline as pipeline_mod
    from cuda_agent.cli import main

    monkeypatch.setattr(pipeline_mod, "load_catalog", lambda *a, **k: catalog)
    out = tmp_path / "run"
    rc = main(
        ["synth", "--out", str(out), "--static-only", "--tasks", "12", "--quiet", "--mix", "1:0.5,2:0.5",
         "--no-decontam"]
    )
    assert rc == 0
    assert "accepted 12 tasks" in capsys.readouterr().out
    rc = main(["synth", "--out", str(out), "--export", "--static-only"])
    assert rc == 0 and (out / "tasks.parquet").is_file()


def test_llm_composer_output_goes_through_the_filters(catalog, tmp_path):
    from cuda_agent.synth.llm import LLMConfig

    good = (
        "```python\nimport torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n\n    def forward(self, x):\n"
        "        return torch.tanh(x) * 2 + x\n\n\nbatch_size = 64\n\n\ndef get_inputs():\n"
        "    return [torch.randn(batch_size, 128)]\n\n\ndef get_init_inputs():\n    return []\n```"
    )
    replies = [good, good.replace("torch.tanh(x)", "torch.nn.functional.dropout(x)"), "no code here"]
    calls = []

    class FakeCompletions:
        def create(self, **kw):
            calls.append(kw)
            text = replies[min(len(calls) - 1, len(replies) - 1)]
            return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=text))])

    client = SimpleNamespace(chat=SimpleNamespace(completions=FakeCompletions()))
    cfg = PipelineConfig(
        out_dir=tmp_path,
        num_tasks=1,
        mix={"torch#2": 1.0},
        execute=False,
        progress=False,
        llm=LLMConfig(model="fake", base_url="http://127.0.0.1:1/v1"),
    )
    pipe = Pipeline(cfg, catalog=catalog, llm_client=client)
    for _ in range(3):
        rec, task = pipe._compose_one("torch#2")
        if task is not None:
            pipe._static_stages(rec)
        pipe._write(rec)
    recs = read_journal(tmp_path / "journal.jsonl")
    assert recs[0]["composer"] == "llm" and "status" not in recs[0]  # passed the static stages
    assert (recs[1]["stage"], recs[1]["reason"]) == ("static", "random_op")
    assert (recs[2]["stage"], recs[2]["reason"]) == ("compose", "compose_failed")
    assert "fuses these operators" in calls[0]["messages"][0]["content"]
