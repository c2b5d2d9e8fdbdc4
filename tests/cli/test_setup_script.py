"""scripts/setup.sh installs the package when it must (a clean clone, a changed pyproject.toml) and only then.

The script runs for real in a copy of the project whose .venv holds stand-ins for `python` and `pip` that
log their calls: what is under test is the script's decision, not pip.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def project(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "clone"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", root / "scripts" / "setup.sh")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    log = tmp_path / "calls.log"
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "pip", "cuda-agent"):
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n')
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return root, log


def setup(root: Path) -> str:
    env = {**os.environ, "CUDA_AGENT_NO_APT": "1", "CUDA_HOME": "/usr/local/cuda"}
    done = subprocess.run(["bash", "scripts/setup.sh"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def pip_installs(log: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if line.startswith("pip install") and "-e" in line)


def test_setup_installs_once_and_again_only_when_pyproject_changes(tmp_path: Path) -> None:
    root, log = project(tmp_path)
    assert "installing cuda-agent (editable)" in setup(root)  # nothing recorded yet, like a clean clone
    assert pip_installs(log) == 1
    assert "already installed" in setup(root)
    assert pip_installs(log) == 1
    with open(root / "pyproject.toml", "a") as f:
        f.write("\n# a new dependency would go here\n")
    setup(root)
    assert pip_installs(log) == 2


def test_a_failed_install_is_not_recorded_as_done(tmp_path: Path) -> None:
    root, log = project(tmp_path)
    pip = root / ".venv" / "bin" / "pip"
    pip.write_text(f'#!/bin/sh\necho "pip $*" >> {log}\nexit 1\n')
    env = {**os.environ, "CUDA_AGENT_NO_APT": "1"}
    failed = subprocess.run(["bash", "scripts/setup.sh"], cwd=root, env=env, capture_output=True, timeout=60)
    assert failed.returncode != 0
    pip.write_text(f'#!/bin/sh\necho "pip $*" >> {log}\n')
    assert "installing cuda-agent (editable)" in setup(root)



def test_gpu_tests_say_they_need_a_gpu_when_skipped() -> None:
    """A skipped GPU test names what is missing (a GPU), not where some other machine might be."""
    import sys

    import pytest
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: GPU tests run here instead of being skipped")
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests/gpu/test_judge_gpu.py"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    skips = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips, done.stdout[-2000:]
    assert all("needs an NVIDIA GPU" in line and "device machine" not in line for line in skips), skips
