"""`--build-only` says when ModelNew.forward never calls cuda_extension (issue 32, item 4): on a CPU the op
gate cannot run, and a forward of plain PyTorch passed as `built`. The reading of the source must be sure
before it says so: every honest submission of the repository reaches its kernels by some route."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cuda_agent.cli import main
from cuda_agent.judge.trusted.forward_calls import forward_never_calls_extension

ROOT = Path(__file__).parents[2]
HEAD = "import torch\nimport torch.nn as nn\nimport cuda_extension\n\n"

NEVER = {
    "plain PyTorch": "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n",
    "only in __init__": (
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        cuda_extension.warm_up()\n\n    def forward(self, x):\n        return x.softmax(-1)\n"
    ),
    "an unused helper": (
        "def helper(x):\n    return cuda_extension.relu(x)\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    ),
}
MAY = {
    "direct": "class ModelNew(nn.Module):\n    def forward(self, x):\n        return cuda_extension.relu(x)\n",
    "an alias": (
        "import cuda_extension as ext\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return ext.relu(x)\n"
    ),
    "from-import": (
        "from cuda_extension import relu as r\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return r(x)\n"
    ),
    "a module-level helper": (
        "def run(x):\n    return cuda_extension.relu(x)\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return run(x)\n"
    ),
    "a method": (
        "class ModelNew(nn.Module):\n    def _go(self, x):\n        return cuda_extension.relu(x)\n\n"
        "    def forward(self, x):\n        return self._go(x)\n"
    ),
    "an attribute set in __init__": (
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.op = cuda_extension.relu\n\n    def forward(self, x):\n        return self.op(x)\n"
    ),
    "a submodule of the file": (
        "class Block(nn.Module):\n    def forward(self, x):\n        return cuda_extension.relu(x)\n\n"
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.block = Block()\n\n    def forward(self, x):\n        return self.block(x)\n"
    ),
    "an autograd Function": (
        "class Relu(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        return cuda_extension.relu(x)\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return Relu.apply(x)\n"
    ),
    "a module-level table": (
        "OPS = {'relu': cuda_extension.relu}\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return OPS['relu'](x)\n"
    ),
    "a class attribute": (
        "class ModelNew(nn.Module):\n    op = staticmethod(cuda_extension.relu)\n\n"
        "    def forward(self, x):\n        return self.op(x)\n"
    ),
    "a base class's forward": (
        "class Base(nn.Module):\n    def forward(self, x):\n        return cuda_extension.relu(x)\n\n"
        "class ModelNew(Base):\n    pass\n"
    ),
    "a helper defined under a module-level if": (
        "if True:\n    def run(x):\n        return cuda_extension.relu(x)\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return run(x)\n"
    ),
    "an overridden __call__": (
        "class ModelNew(nn.Module):\n    def __call__(self, x):\n        return cuda_extension.relu(x)\n\n"
        "    def forward(self, x):\n        return torch.relu(x)\n"
    ),
}


@pytest.mark.parametrize("case", sorted(NEVER))
def test_a_forward_that_never_reaches_the_extension_is_named(case: str) -> None:
    found = forward_never_calls_extension(HEAD + NEVER[case])
    assert found is not None, case
    line, message = found
    assert (HEAD + NEVER[case]).splitlines()[line - 1].strip().startswith("def forward")
    assert message.startswith("ModelNew.forward never calls cuda_extension") and "op gate" in message


@pytest.mark.parametrize("case", sorted(MAY))
def test_every_route_to_the_extension_counts(case: str) -> None:
    assert forward_never_calls_extension(HEAD + MAY[case]) is None, case


def test_no_import_of_the_extension_and_files_it_cannot_read() -> None:
    found = forward_never_calls_extension("import torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
                                          "    def forward(self, x):\n        return x * 2\n")  # fmt: skip
    assert found is not None and found[1].startswith("model_new.py never imports cuda_extension")
    for unreadable in ("class ModelNew(:\n", "import cuda_extension\nclass Other:\n    pass\n",
                       "class ModelNew:\n    pass\n"):  # fmt: skip
        assert forward_never_calls_extension(unreadable) is None


def test_no_honest_submission_of_the_repository_is_named() -> None:
    """The examples, the adversarial suite's honest cases and the workspace's reference solutions all call
    their kernels; the finding would refuse them in --build-only and utils/compile.sh."""
    honest = [p for p in ROOT.glob("examples/**/model_new.py")]
    honest += [p for p in ROOT.glob("tests/adversarial/00_*/model_new.py")]
    assert len(honest) > 50
    named = [str(p) for p in honest if forward_never_calls_extension(p.read_text()) is not None]
    assert named == []
    cheat = ROOT / "tests" / "adversarial" / "01_torch_softmax_in_forward" / "model_new.py"
    assert forward_never_calls_extension(cheat.read_text()) is not None


def test_build_only_refuses_a_forward_without_kernel_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    submission = tmp_path / "plain"
    shutil.copytree(ROOT / "examples" / "row_softmax", submission)
    shutil.rmtree(submission / "kernels")  # no build to wait for: the static stage decides first
    (submission / "model_new.py").write_text(
        HEAD + NEVER["plain PyTorch"].replace("torch.relu(x)", "x.softmax(-1)")
    )
    assert main(["judge", str(submission), "--build-only", "--json"]) == 1
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "rejected" and record["stages"]["static"] == "failed", record["reason"]
    assert "model_new.py:6: ModelNew.forward never calls cuda_extension" in record["reason"]
