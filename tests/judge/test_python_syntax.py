"""A syntax error in model_new.py is a compile error with the file and the line (issue 32, item 5), in the
full judgment and in `judge --build-only` alike; it used to come back as `rejected` by the static checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cuda_agent.cli import main
from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.judgment import Judgment
from cuda_agent.judge.decide.verdict import Status
from cuda_agent.judge.trusted.build import BuildConfig
from cuda_agent.judge.trusted.python_syntax import syntax_problem
from cuda_agent.task import load_task

EXAMPLES = Path(__file__).parents[2] / "examples"
# Line 14 of row_softmax's model_new.py: forward's return, with its closing parenthesis lost.
BROKEN = "return cuda_extension.row_softmax_forward(x)"


def _broken_submission(root: Path) -> Path:
    shutil.copytree(EXAMPLES / "row_softmax", root)
    model_new = root / "model_new.py"
    text = model_new.read_text()
    assert BROKEN in text
    model_new.write_text(text.replace(BROKEN, BROKEN[:-1]))
    return root


def _line_of_break(root: Path) -> int:
    return next(
        i for i, line in enumerate((root / "model_new.py").read_text().splitlines(), 1) if BROKEN[:-1] in line
    )


def test_syntax_problem_names_the_line_and_shows_the_caret() -> None:
    problem = syntax_problem("import torch\n\nx = (1,\n")
    assert problem is not None and problem.line == 3
    assert problem.reason.startswith("model_new.py line 3: SyntaxError:")
    assert 'File "model_new.py", line 3' in problem.log and "^" in problem.log
    # Raised only when the tree is compiled, not when it is parsed: still a syntax error.
    late = syntax_problem("import torch\nreturn torch.ones(1)\n")
    assert late is not None and late.line == 2 and "'return' outside function" in late.reason
    assert syntax_problem("import torch\n") is None


def test_full_judgment_reports_a_syntax_error_as_a_compile_error_before_building(tmp_path: Path) -> None:
    """Before the build and the static rules: a kernel finding beside it does not turn it into `rejected`."""
    submission = _broken_submission(tmp_path / "broken")
    (submission / "kernels" / "spawn.cpp").write_text(
        '#include <cstdlib>\nint run() { return std::system("id"); }\n'
    )
    build = BuildConfig(cache_dir=tmp_path / "objects", precompiled_header=False)
    judgment = Judgment(submission, load_task(submission / "model.py"),
                        JudgeConfig(scratch_dir=tmp_path / "scratch", build=build))  # fmt: skip
    try:
        verdict = judgment.build_only()
    finally:
        judgment.cleanup()
    assert verdict is not None and verdict.status == Status.COMPILE_ERROR, verdict
    assert verdict.reward == -1
    assert verdict.reason.startswith(f"model_new.py line {_line_of_break(submission)}: SyntaxError"), (
        verdict.reason
    )
    assert "^" in verdict.compile_log
    assert not list((tmp_path / "objects").glob("*.o"))  # nothing was compiled for it


def test_build_only_reports_a_syntax_error_as_a_compile_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    submission = _broken_submission(tmp_path / "broken")
    shutil.rmtree(submission / "kernels")  # the build fails at once too; the syntax error is named first
    assert main(["judge", str(submission), "--build-only", "--json"]) == 1
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "compile_error" and record["reward"] == -1
    line = _line_of_break(submission)
    assert record["reason"].startswith(f"model_new.py line {line}: SyntaxError"), record["reason"]
    assert record["stages"]["build"] == "failed" and record["stages"]["task"] == "passed"
    assert f'File "model_new.py", line {line}' in record["compile_log"]
    assert "syntax error" not in json.dumps(record["checks"]["static"])  # not a finding of the rules
