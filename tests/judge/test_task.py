"""Task loading and validation: every bad task gets an error naming its problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.task import MetaUnsupported, TaskError, check_task_runs, load_task

GOOD = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.relu(self.linear(x))

def get_inputs():
    return [torch.randn(8, 16)]

def get_init_inputs():
    return [16]
"""


def test_good_task_loads_from_source_and_file(tmp_path: Path) -> None:
    task = load_task(GOOD, name="relu_linear")
    assert task.name == "relu_linear"
    assert len(task.digest) == 64
    path = tmp_path / "relu_linear.py"
    path.write_text(GOOD)
    from_file = load_task(path)
    assert from_file.name == "relu_linear" and from_file.source == GOOD
    assert check_task_runs(from_file) == [((8, 16), "float32")]


def test_folder_with_model_py_loads(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(GOOD)
    assert load_task(tmp_path).name == tmp_path.name


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="not found"):
        load_task(tmp_path / "nope.py")


def test_syntax_error_names_the_line() -> None:
    with pytest.raises(TaskError, match=r"syntax error at line 3"):
        load_task("import torch\nclass Model:\n    def forward(self x):\n        pass\n")


@pytest.mark.parametrize("missing", ["get_inputs", "get_init_inputs"])
def test_missing_function_is_named(missing: str) -> None:
    source = GOOD.replace(f"def {missing}(", f"def renamed_{missing}(")
    with pytest.raises(TaskError, match=f"missing {missing}"):
        load_task(source)


def test_missing_model_and_forward() -> None:
    with pytest.raises(TaskError, match="missing Model"):
        load_task(GOOD.replace("class Model(", "class Other("))
    with pytest.raises(TaskError, match="no forward"):
        load_task(GOOD.replace("def forward(", "def other("))


def test_get_inputs_without_tensors_is_rejected() -> None:
    task = load_task(GOOD.replace("return [torch.randn(8, 16)]", "return [8, 16]"))
    with pytest.raises(TaskError, match="returned no tensors"):
        check_task_runs(task)


def test_model_failing_on_its_own_inputs_is_rejected() -> None:
    task = load_task(GOOD.replace("torch.randn(8, 16)", "torch.randn(8, 17)"))
    with pytest.raises(TaskError, match="fails on its own inputs"):
        check_task_runs(task)


def test_a_limit_of_the_meta_probe_is_not_a_broken_task() -> None:
    """A generator on the input's device is valid on a GPU and fails only on `meta` (review, 2026-12-05): the
    probe says it cannot check (the GPU will), where a real error on meta stays a TaskError (above)."""
    task = load_task(GOOD.replace(
        "return torch.relu(self.linear(x))",
        "g = torch.Generator(device=x.device)\n        g.manual_seed(0)\n        return torch.relu(self.linear(x))"))
    with pytest.raises(MetaUnsupported, match="cannot check on the meta device"):
        check_task_runs(task)


def test_import_error_in_task_is_reported() -> None:
    task = load_task("import not_a_module_xyz\n" + GOOD)
    with pytest.raises(TaskError, match="failed to import: ModuleNotFoundError"):
        check_task_runs(task)


def test_bundled_examples_are_valid_tasks() -> None:
    examples = sorted((Path(__file__).parents[2] / "examples").glob("*/model.py"))
    assert examples, "examples/ holds no model.py"
    for model in examples:
        outputs = check_task_runs(load_task(model))
        assert outputs and all(dtype for _, dtype in outputs), model
