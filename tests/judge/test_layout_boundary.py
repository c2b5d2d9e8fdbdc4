"""The judge's layout shows its trust boundary, and the code enforces what the layout says.

`candidate/` is what the candidate's process loads; it must never pull in `trusted/` or `decide/` code
(the judge's decisions, caches, keys), neither at import time nor lazily inside a function. The public
names stay importable from `cuda_agent.judge` without loading anything until they are used.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import cuda_agent.judge as judge_package

JUDGE = Path(judge_package.__file__).parent
# What code running in the candidate's process may import from this project.
CANDIDATE_ALLOWED = ("cuda_agent.judge.candidate", "cuda_agent.judge.common", "cuda_agent.task")


STEPS = ("cuda_agent.judge", "cuda_agent.judge.candidate.worker", "cuda_agent.judge.trusted.reference_worker")


@pytest.fixture(scope="module")
def loaded() -> dict[str, list[str]]:
    """Project modules in sys.modules of one fresh isolated interpreter (`python -I`, as the pool starts
    workers) after importing each of STEPS in turn: the package alone, then the candidate worker, then
    the reference worker (whose closure is then at most what is listed)."""
    code = (
        "import importlib, json, sys\n"
        f"for step in {STEPS!r}:\n"
        "    importlib.import_module(step)\n"
        "    print(json.dumps([step, sorted(m for m in sys.modules if m.startswith('cuda_agent'))]))\n"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return dict(json.loads(line) for line in out.stdout.splitlines() if line.startswith("["))


def _allowed_in_candidate(name: str) -> bool:
    return name in ("cuda_agent", "cuda_agent.judge") or name.startswith(CANDIDATE_ALLOWED)


def test_candidate_worker_loads_no_trusted_or_decision_module(loaded: dict[str, list[str]]) -> None:
    closure = loaded["cuda_agent.judge.candidate.worker"]
    assert "cuda_agent.judge.candidate.worker" in closure  # the probe saw the import itself
    forbidden = [m for m in closure if not _allowed_in_candidate(m)]
    assert forbidden == [], f"the candidate's process would hold judge code beyond candidate/ and common/: {forbidden}"


def test_reference_worker_loads_no_decision_module(loaded: dict[str, list[str]]) -> None:
    """The reference worker computes facts; the verdict is decided in the parent alone."""
    closure = loaded["cuda_agent.judge.trusted.reference_worker"]
    assert "cuda_agent.judge.trusted.reference_worker" in closure
    assert [m for m in closure if m.startswith("cuda_agent.judge.decide")] == []


def _project_imports(path: Path) -> list[str]:
    """Every cuda_agent module a file imports, at any depth (lazy imports inside functions included)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "cuda_agent.judge":
                names += [f"cuda_agent.judge.{a.name}" for a in node.names]
            elif node.module.startswith("cuda_agent"):
                names.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            names.append(f"<relative import in {path.name}>")
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names if a.name.startswith("cuda_agent")]
    return names


@pytest.mark.parametrize("folder", ["candidate", "common"])
def test_untrusted_side_imports_only_its_own_side(folder: str) -> None:
    files = sorted((JUDGE / folder).glob("*.py"))
    assert len(files) >= 4
    bad = {f.name: [n for n in _project_imports(f) if not _allowed_in_candidate(n)] for f in files}
    if folder == "common":  # plumbing does not even reach into candidate/
        bad = {k: v + [n for n in _project_imports(JUDGE / folder / k) if n.startswith("cuda_agent.judge.candidate")]
               for k, v in bad.items()}  # fmt: skip
    assert {k: v for k, v in bad.items() if v} == {}


def test_every_subpackage_states_its_trust_rule_and_every_module_has_a_docstring() -> None:
    for folder in ("candidate", "trusted", "decide", "common"):
        doc = ast.get_docstring(ast.parse((JUDGE / folder / "__init__.py").read_text())) or ""
        assert "Trust rule" in doc, folder
    undocumented = [str(p.relative_to(JUDGE)) for p in JUDGE.rglob("*.py")
                    if not ast.get_docstring(ast.parse(p.read_text()))]  # fmt: skip
    assert undocumented == []
    assert not [p.name for p in JUDGE.glob("*.py") if p.name not in ("__init__.py", "config.py", "errors.py")], (
        "judge/ holds only the public surface at its top; code lives in a subpackage by trust"
    )


def test_public_names_are_lazy_and_resolve(loaded: dict[str, list[str]]) -> None:
    assert loaded["cuda_agent.judge"] == ["cuda_agent", "cuda_agent.judge"]  # the package loads nothing else
    for name in judge_package.__all__:
        assert getattr(judge_package, name) is not None, name
    from cuda_agent.judge import JudgeConfig, JudgeService, Status, Verdict, judge  # noqa: F401
    from cuda_agent.judge.decide.service import JudgeService as defined

    assert JudgeService is defined
    with pytest.raises(AttributeError, match="no attribute"):
        judge_package.no_such_name  # noqa: B018
