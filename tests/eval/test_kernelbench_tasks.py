"""Reading a KernelBench checkout as it is: levelN/<problem>_<Name>.py, the checkout's root or its inner
KernelBench/ folder, level and problem selection, broken files skipped with the reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from eval_helpers import MINI

from cuda_agent.cli import main
from cuda_agent.eval.kernelbench import discover, find, level_sizes, parse_levels
from cuda_agent.task import TaskError


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout laid out like github.com/ScalingIntelligence/KernelBench: root/KernelBench/levelN/."""
    root = tmp_path / "KernelBench-main"
    shutil.copytree(MINI, root / "KernelBench", ignore=shutil.ignore_patterns("solutions", "load_inline"))
    (root / "KernelBench" / "level1" / "5_Broken.py").write_text("import torch\n\nclass Model:\n    pass\n")
    (root / "KernelBench" / "level1" / "notes.md").write_text("not a task")
    (root / "README.md").write_text("# KernelBench\n")
    return root


def test_levels_names_and_order_come_from_the_files(checkout: Path) -> None:
    problems: list[tuple[str, str]] = []
    tasks = discover(checkout, problems=problems)
    assert [t.task_id for t in tasks] == ["level1/19_ReLU", "level1/23_Softmax", "level1/40_LayerNorm",
                                          "level2/1_Gemm_Bias_ReLU", "level2/2_Scale_GELU_Clamp",
                                          "level3/1_MLP", "level3/2_LayerNorm_MLP"]  # fmt: skip
    relu = tasks[0]
    assert (relu.level, relu.problem, relu.name, relu.slug) == (1, 19, "ReLU", "level1_19_ReLU")
    assert relu.task.source == (MINI / "level1" / "19_ReLU.py").read_text()
    assert len(problems) == 1 and problems[0][0].endswith("5_Broken.py") and "get_inputs" in problems[0][1]
    assert [t.task_id for t in discover(checkout, [3, 1], tasks_per_level=1, problems=[])] == ["level1/19_ReLU", "level3/1_MLP"]
    assert [t.task_id for t in discover(checkout / "KernelBench", limit=2, problems=[])] == [
        "level1/19_ReLU", "level1/23_Softmax"]
    assert level_sizes(checkout) == {1: 4, 2: 2, 3: 2}  # every problem file counts, broken or not
    assert find(checkout, 2, 1).name == "Gemm_Bias_ReLU" and find(checkout, 2, 9) is None
    with pytest.raises(TaskError, match=r"5_Broken\.py"):
        discover(checkout, [1])  # without a problems list a broken file is an error


def test_bad_levels_and_folders_are_clear_errors(tmp_path: Path, capsys) -> None:
    assert parse_levels("1,2,3") == [1, 2, 3] and parse_levels("3, 1-2") == [1, 2, 3]
    for bad in ("", "one", "0"):
        with pytest.raises(ValueError, match="--levels"):
            parse_levels(bad)
    with pytest.raises(TaskError, match="has no level4/"):
        discover(MINI, [4])
    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskError, match=r"holds no level1/"):
        discover(tmp_path / "empty")
    assert main(["eval", "--tasks", str(tmp_path / "empty"), "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                 "--out", str(tmp_path / "run")]) == 2  # fmt: skip
    assert "holds no level1/" in capsys.readouterr().err
    assert main(["eval", "--tasks", str(MINI), "--model", "m", "--out", str(tmp_path / "run")]) == 2
    assert "no model server" in capsys.readouterr().err
    assert main(["eval", "--tasks", str(MINI), "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "--out RUN is required" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # nothing made for a command that could not start
