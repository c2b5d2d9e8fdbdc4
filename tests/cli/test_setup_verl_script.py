"""scripts/setup_verl.sh installs verl's environment when it must, only then, and hands pip's own indexes,
links and constraints to uv.

The script runs for real in a copy of the project whose .venv-verl holds stand-ins for `python`, `pip`
and `uv` that log their calls (the real install is what CI's tests/verl step exercises).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PYTHON = """#!/bin/sh
echo "python $*" >> {log}
[ -f {venv}/installed ]
"""
PIP = """#!/bin/sh
echo "pip $*" >> {log}
case "$*" in
  "config get global.extra-index-url") echo "file:///mirror/a file:///mirror/b" ;;
  "config get global.find-links") echo "/wheels" ;;
  "config get global.constraint") echo "{constraints}" ;;
  "install -q uv") printf '#!/bin/sh\\necho "uv $*" >> {log}\\ntouch {venv}/installed\\n' > {venv}/bin/uv; chmod +x {venv}/bin/uv ;;
  install*) touch {venv}/installed ;;
esac
"""


def project(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "clone"
    (root / "scripts").mkdir(parents=True)
    (root / "recipes" / "cuda_agent").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup_verl.sh", root / "scripts" / "setup_verl.sh")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    shutil.copy(ROOT / "recipes" / "cuda_agent" / "REQUIRED_VERL.txt", root / "recipes" / "cuda_agent")
    log = tmp_path / "calls.log"
    venv = root / ".venv-verl"
    (venv / "bin").mkdir(parents=True)
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("torch<=2.14.1\n")
    for name, text in (("python", PYTHON), ("pip", PIP)):
        tool = venv / "bin" / name
        tool.write_text(text.format(log=log, venv=venv, constraints=constraints))
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return root, log


def setup(root: Path, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    done = subprocess.run(["bash", "scripts/setup_verl.sh"], cwd=root, env={**clean, **env}, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def calls(log: Path) -> list[str]:
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def test_installs_with_uv_and_pips_indexes_then_only_checks(tmp_path: Path) -> None:
    root, log = project(tmp_path)
    out = setup(root)
    assert "with uv" in out and "ready" in out
    (uv,) = [c for c in calls(log) if c.startswith("uv ")]
    for part in ("--extra-index-url file:///mirror/a", "--extra-index-url file:///mirror/b", "--find-links /wheels",
                 f"--constraint {tmp_path / 'constraints.txt'}", "--index-strategy unsafe-best-match",
                 "torch==2.14.1", "-e .[verl]", "-r recipes/cuda_agent/REQUIRED_VERL.txt", "pytest"):  # fmt: skip
        assert part in uv, part
    assert "already installed" in setup(root)
    assert not any(c.startswith(("uv ", "pip install")) for c in calls(log))


def test_a_changed_pin_reinstalls_and_plain_pip_is_a_choice(tmp_path: Path) -> None:
    root, log = project(tmp_path)
    setup(root)
    calls(log)
    pins = root / "recipes" / "cuda_agent" / "REQUIRED_VERL.txt"
    pins.write_text(pins.read_text() + "# a new companion\n")
    out = setup(root, CUDA_AGENT_VERL_PIP="1")
    assert "with pip" in out
    installs = [c for c in calls(log) if c.startswith(("uv ", "pip install"))]
    assert len(installs) == 1 and installs[0].startswith("pip install -q --disable-pip-version-check torch==2.14.1")
