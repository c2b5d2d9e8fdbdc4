"""The judge's parent (decide/, JudgeConfig, the service) runs without importing torch: torch lives in the
workers, and importing it costs the parent about 3 s and 0.4 GB of host memory. A default moved into a
module that imports torch (as the precision audit's k once was) brings it in silently; this catches that."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize(
    "module",
    ["cuda_agent.judge.config", "cuda_agent.judge.decide.judgment", "cuda_agent.judge.decide.service",
     "cuda_agent.eval.precision"],
)  # fmt: skip
def test_the_parent_side_imports_no_torch(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import sys, {module}; print('torch' in sys.modules)"],
        capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False", f"importing {module} imports torch"
