"""Catalog crawl, composition and rendering (CPU, meta device)."""

from __future__ import annotations

import json

import pytest

from cuda_agent.synth import DEFAULT_MIX
from cuda_agent.synth.catalog import catalog_from_json, catalog_to_json, load_catalog
from cuda_agent.synth.compose import ComposeConfig, Composer
from cuda_agent.synth.render import render
from cuda_agent.task import check_task_runs, load_task


def test_crawl_generalises_modules_and_flags_random(catalog):
    conv = catalog.get("nn.Conv2d")
    kinds = {a.kind for p in conv.patterns for a in p.ctor}
    assert {"dim", "width"} <= kinds  # in_channels tied to the input, out_channels a free width
    linear = catalog.get("nn.Linear")
    assert any(a.kind == "dim" and a.value == p.rank - 1 for p in linear.patterns for a in p.ctor)
    assert catalog.get("nn.Dropout").random
    assert catalog.get("F.dropout").random
    assert not catalog.get("torch.add").random
    assert "Dropout" in catalog.random_op_names()
    names = {e.name for e in catalog.select(source="transformers")}
    assert {"LlamaRMSNorm", "LlamaMLP", "LlamaAttention"} <= names


def test_catalog_json_round_trip_and_cache(catalog, tmp_path):
    again = catalog_from_json(json.loads(json.dumps(catalog_to_json(catalog))))
    assert again.entries == catalog.entries
    from cuda_agent.synth.catalog import CrawlOptions

    opts = CrawlOptions(include=("torch.add",), modules=False, transformers=False)
    first = load_catalog(opts, cache_dir=tmp_path)
    assert [e.name for e in first.entries] == ["torch.add"]
    assert list(tmp_path.glob("catalog-*.json"))
    assert load_catalog(opts, cache_dir=tmp_path) is first  # memoised


@pytest.mark.parametrize("bucket", list(DEFAULT_MIX))
def test_composed_tasks_are_valid_kernelbench(catalog, bucket):
    composer = Composer(catalog, ComposeConfig.for_cpu())
    comp = composer.compose(bucket, seed=11)
    task = render(comp, catalog)
    assert task.data_source == bucket
    assert len(task.ops) == (1 if bucket == "transformers" else int(bucket[-1]))
    loaded = load_task(task.code, name=task.name)
    shapes = check_task_runs(loaded, device="meta")
    assert shapes and shapes[0][1] == "float32"
    assert "batch_size = " in task.code


def test_sizing_aims_at_the_band(catalog):
    gpu = Composer(catalog, ComposeConfig(band_ms=(1.0, 100.0)))
    cpu = Composer(catalog, ComposeConfig.for_cpu())
    big = gpu.compose("torch#2", seed=3)
    small = cpu.compose("torch#2", seed=3)
    assert big.ops == small.ops  # same sampling, different sizes
    assert big.batch >= small.batch
    assert big.est_ms <= 100.0
