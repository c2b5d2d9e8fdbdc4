"""On a GPU: `eval --submissions` judges the mini set's reference solutions for real (ok, timed, both
speedups recorded with their raw timing statistics) and `--recheck` agrees with it within the noise."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from eval_helpers import MINI

from cuda_agent.cli import main
from cuda_agent.eval.records import read_records


@pytest.mark.gpu
def test_reference_solutions_are_correct_timed_and_recheck_agrees(tmp_path: Path) -> None:
    subs, run = tmp_path / "subs", tmp_path / "run"
    for task in ("level1/19_ReLU", "level2/2_Scale_GELU_Clamp"):
        shutil.copytree(MINI / "solutions" / task, subs / task)
    assert main(["eval", "--submissions", str(subs), "--tasks", str(MINI), "--out", str(run), "--bootstrap", "50"]) == 0
    records = read_records(run / "records.jsonl")
    assert sorted(r.task_id for r in records) == ["level1/19_ReLU", "level2/2_Scale_GELU_Clamp"]
    for record in records:
        assert record.status == "ok" and record.reward >= 1, record.reason
        assert record.speedup_vs_eager and record.speedup_vs_compile and record.candidate_ms
        timing = json.loads((run / record.verdict_path).read_text())["verdict"]["timing"]
        assert timing["candidate"]["samples"] > 0 and timing["eager"]["p75"] >= timing["eager"]["p25"]
    environment = json.loads((run / "environment.json").read_text())
    assert environment["gpus"] and environment["verdict_environments"][0]["gpu"]
    main(["eval", "--recheck", str(run)])
    result = json.loads((run / "recheck.json").read_text())
    assert result["summary"]["rechecked"] == 2 and result["summary"]["same_status"] == 2
