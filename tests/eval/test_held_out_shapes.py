"""Held-out shapes (issue 29, item 8): which sizes of a task vary, the variants' sources, and
`eval --held-out-shapes` over a run (its records, bundle, report) on the CPU.

The GPU verification itself is the judge's (tests/gpu); here the run is judged by a real `cuda-agent
serve --build-only` over HTTP (CPU checks: every variant is built, none verified), and the pass-rate
arithmetic by a backend that answers as a GPU judge would for a kernel written for one size only.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import TOKEN, JudgeServer

from cuda_agent.cli import main
from cuda_agent.eval.held_out import held_out, held_out_table
from cuda_agent.eval.records import EvalRecord, append_record
from cuda_agent.eval.shape_variants import MIN_SIZE, shape_variants, varied_constants
from cuda_agent.task import Task, check_task_runs, load_task

ROOT = Path(__file__).resolve().parents[2]

LINEAR = """import torch
import torch.nn as nn

batch_size = 128
in_features = 1024
out_features = 512


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
"""


def test_sizes_that_build_the_model_stay_and_the_batch_varies() -> None:
    chosen, reason = varied_constants(LINEAR)
    assert reason is None and set(chosen) == {"batch_size"}  # in_features builds the Linear: fixed
    variants, _ = shape_variants(Task("linear", LINEAR))
    assert [(v.name, v.sizes) for v in variants] == [("half", {"batch_size": (128, 64)}),
                                                     ("ragged", {"batch_size": (128, 97)})]  # fmt: skip
    for variant in variants:  # the variant is still a task, and its reference runs at the new size
        task = load_task(variant.task.source, name=variant.task.name)
        check_task_runs(task)
        assert (
            variant.task.source.replace(f"batch_size = {variant.sizes['batch_size'][1]}", "batch_size = 128")
            == LINEAR
        )


def test_the_elementwise_example_varies_both_sizes() -> None:
    task = load_task(ROOT / "examples" / "elementwise_chain" / "model.py")
    variants, reason = shape_variants(task)
    assert reason is None
    half, ragged = variants
    assert half.sizes == {"batch_size": (16384, 8192), "dim": (8192, 4096)}
    assert all(new % 2 == 1 and new < old for old, new in ragged.sizes.values())  # odd, smaller
    assert "scale = 1.5" in ragged.task.source and ragged.task.name == "elementwise_chain-ragged"


@pytest.mark.parametrize(("source", "expected"), [
    # forward reads the batch: it is part of the task's definition
    (LINEAR.replace("return torch.relu(self.fc(x))", "return torch.relu(self.fc(x)).view(batch_size, -1)"), set()),
    # a derived size follows the one it comes from
    (LINEAR.replace("batch_size = 128", "rows = 64\nbatch_size = rows * 2"), {"rows"}),
    # a helper that only get_inputs calls: its sizes vary
    (LINEAR.replace("def get_inputs():\n    return [torch.randn(batch_size, in_features)]",
                    "def make(n):\n    return torch.randn(n, in_features)\n\n\n"
                    "def get_inputs():\n    return [make(batch_size)]"), {"batch_size"}),
    # ... but where the model's code calls the helper too, what it reads is fixed
    (LINEAR.replace("def get_inputs():\n    return [torch.randn(batch_size, in_features)]",
                    "def make(n=batch_size):\n    return torch.randn(n, in_features)\n\n\n"
                    "def get_inputs():\n    return [make()]").replace("return torch.relu(self.fc(x))",
                                                                  "return torch.relu(self.fc(x)) + 0 * make()"), set()),
    # a size assigned twice is left alone; one below MIN_SIZE is not a size
    (LINEAR.replace("batch_size = 128", "batch_size = 128\nbatch_size = 256"), set()),
    (LINEAR.replace("batch_size = 128", f"batch_size = {MIN_SIZE - 1}"), set()),
])  # fmt: skip
def test_which_constants_vary(source: str, expected: set[str]) -> None:
    compile(source, "task", "exec")
    chosen, reason = varied_constants(source)
    assert set(chosen) == expected, (chosen, reason)
    assert (reason is None) == bool(expected)


def test_tasks_without_variants_say_why() -> None:
    literal = LINEAR.replace("torch.randn(batch_size, in_features)", "torch.randn(128, 1024)")
    assert shape_variants(Task("t", literal))[1] == "get_inputs() reads no module-level integer size"
    fixed = LINEAR.replace(
        "return [in_features, out_features]", "return [in_features, out_features, batch_size]"
    )
    assert "also builds the model" in str(shape_variants(Task("t", fixed))[1])
    assert "does not parse" in str(shape_variants(Task("t", "def (:\n"))[1])


# ------------------------------------------------------------------------------------------ the eval pass


def _run(tmp_path: Path) -> Path:
    """A run with two correct kernels (Linear + ReLU, the elementwise example) and one wrong one, bundled."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"settings": {"judge": {"timing": True}}}))
    example = ROOT / "examples" / "elementwise_chain"
    for problem, (name, model, status) in enumerate([("Linear_ReLU", LINEAR, "ok"),
                                                     ("Chain", example.joinpath("model.py").read_text(), "ok"),
                                                     ("Wrong", LINEAR, "incorrect")], start=1):  # fmt: skip
        folder = run / "submissions" / f"level1_{problem}_{name}" / "ep0"
        folder.mkdir(parents=True)
        (folder / "model.py").write_text(model)
        (folder / "model_new.py").write_text((example / "model_new.py").read_text())
        (folder / "kernels").mkdir()
        for source in (example / "kernels").iterdir():
            (folder / "kernels" / source.name).write_text(source.read_text())
        append_record(run / "records.jsonl", EvalRecord(task_id=f"level1/{problem}_{name}", level=1, problem=problem,
                                                        name=name, episode=0, status=status,
                                                        reward=2 if status == "ok" else -1))  # fmt: skip
    return run


class FixedSizeJudge:
    """Answers as a GPU judge does for a kernel that hard-codes its task's batch: correct at the task's own
    sizes and at the half variant (a multiple of its tile), wrong at the ragged one."""

    name = "fixed-size"

    def __init__(self) -> None:
        self.seen: list[tuple[Path, str]] = []

    def gpus(self) -> list[str]:
        return []

    def judge_many(self, items: list) -> Any:
        for index, (folder, task, key) in enumerate(items):
            assert (
                folder / "model.py"
            ).read_text() == task.source  # the variant's model.py beside model_new.py
            self.seen.append((folder, key))
            ragged = folder.name == "ragged"
            yield index, {"status": "incorrect" if ragged else "ok", "reward": -1 if ragged else 1,
                          "reason": "wrong result on input set 1" if ragged else "", "verdict": {}}  # fmt: skip

    def close(self) -> None:
        pass


def test_the_pass_rate_counts_kernels_correct_on_every_variant(tmp_path: Path) -> None:
    run = _run(tmp_path)
    judge = FixedSizeJudge()
    lines: list[str] = []
    result = held_out(run, judge, lines.append)
    # the two correct kernels, two variants each; the wrong one is not checked
    assert len(judge.seen) == 4 and len({key for _, key in judge.seen}) == 4
    assert sorted(k["task_id"] for k in result["kernels"]) == ["level1/1_Linear_ReLU", "level1/2_Chain"]
    assert result["summary"] == {**result["summary"], "kernels": 2, "generalise": 0, "pass_rate": 0.0,
                                 "variant_judgments": 4, "variants_passed": 2}  # fmt: skip
    linear = next(k for k in result["kernels"] if k["task_id"] == "level1/1_Linear_ReLU")
    assert linear["variants"]["half"] == {
        "status": "ok",
        "passed": True,
        "reason": "",
        "sizes": {"batch_size": [128, 64]},
    }
    assert json.loads((run / "held_out.json").read_text())["summary"] == result["summary"]
    assert "0/2 correct kernels generalise to held-out shapes (0%)" in held_out_table(result)
    assert lines[0].startswith("held-out shapes: 4 variant judgment(s) of 2 correct kernel(s)")
    # the report shows them, and metrics.json carries the figure beside the run's own metrics
    assert main(["eval", "--report", str(run), "--bootstrap", "20"]) in (0, 1)
    report = (run / "report.md").read_text()
    assert (
        "## Held-out shapes" in report
        and "0 of 2 correct kernels" in report
        and "batch_size 128->97" in report
    )
    assert json.loads((run / "metrics.json").read_text())["held_out_shapes"]["kernels"] == 2


def test_eval_held_out_shapes_over_a_real_judge_server(tmp_path: Path, capsys, monkeypatch, judge_cache: Path) -> None:
    """`eval --held-out-shapes RUN --judge-url`: every variant reaches the server as its own submission;
    a CPU server builds them and verifies none, so no kernel is counted as generalising. The server builds
    in the run's judge cache (its PCH compiled), as a deployed one builds in its warm cache."""
    run = _run(tmp_path)
    server = JudgeServer(tmp_path / "srv", cache=judge_cache)
    try:
        monkeypatch.setenv("CUDA_AGENT_JUDGE_TOKEN", TOKEN)
        code = main(["eval", "--held-out-shapes", str(run), "--judge-url", server.url, "--json"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        summary = json.loads(captured.out.strip().splitlines()[-1])
        assert summary["variant_judgments"] == 4 and summary["generalise"] == 0
        assert len(server.judgments()) == 4
        assert re.search(r"held-out shapes written to .*held_out.json", captured.err)
    finally:
        server.stop()
    assert main(["eval", "--held-out-shapes", str(run), "--build-only"]) == 2
    assert "cannot tell a right answer from a wrong one" in capsys.readouterr().err
    assert main(["eval", "--held-out-shapes", str(tmp_path), "--recheck", str(run)]) == 2
    assert "--recheck and --held-out-shapes are separate runs" in capsys.readouterr().err
    assert os.path.isdir(run / "held_out" / "level1_1_Linear_ReLU" / "ep0" / "ragged")
