"""Conditions a new user hits (no nvcc, a read-only output folder, Ctrl-C) end in one message, not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.cli import main
from cuda_agent.judge.trusted import toolchain

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_nvcc_is_one_line_not_a_traceback(monkeypatch, tmp_path: Path, capsys) -> None:
    # The machine condition (no CUDA toolkit anywhere) cannot be made on a machine that has one, so the
    # toolkit search is made to find nothing; everything above it runs for real.
    def nothing_found() -> Path:
        raise toolchain.ToolchainError("nvcc not found: install the CUDA toolkit or set CUDA_HOME")

    monkeypatch.setattr(toolchain, "_find_cuda_home", nothing_found)
    toolchain.discover.cache_clear()
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache"))
    try:
        code = main(["judge", str(ROOT / "examples" / "elementwise_chain"), "--build-only"])
    finally:
        toolchain.discover.cache_clear()
    err = capsys.readouterr().err
    assert code != 0
    assert "nvcc not found: install the CUDA toolkit or set CUDA_HOME" in err and "Traceback" not in err


def test_a_compile_stopped_at_the_limit_names_the_flag_that_sets_it(monkeypatch, tmp_path: Path, capsys) -> None:
    """A busy 2-core machine compiled a load_inline import's .cu for over the default 180 s (CI, 2026-12-06):
    the person at the command line is told which flag sets the limit; the verdict's reason (what an agent
    reads too) stays as it is."""
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache"))  # cold: nothing compiles within 1 s
    code = main(["judge", str(ROOT / "examples" / "elementwise_chain"), "--build-only", "--build-timeout", "1"])
    out, err = capsys.readouterr()
    assert code == 1 and "did not finish within 1 s and was stopped" in out
    assert "hint: the judge stops each file's compilation after 1 s (--build-timeout)" in err
    assert "--build-timeout" not in out, "the verdict itself does not name the flag"


def test_a_build_stopped_by_its_total_limit_says_so(monkeypatch, tmp_path: Path, capsys) -> None:
    """CI, 2026-12-06: `--build-timeout 800` raised the limit per file but left the build's total at 300 s, and
    the build stopped at 300 s under a message naming 800 s. The total now follows the per-file limit by
    default, can be set, and the message names whichever limit stopped the build."""
    from cuda_agent.commands.judge import build_total_timeout

    assert build_total_timeout(800, None) == 1600 and build_total_timeout(60, None) == 300
    assert build_total_timeout(800, 900) == 900
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache"))  # cold: nothing compiles within 3 s
    code = main(["judge", str(ROOT / "examples" / "elementwise_chain"), "--build-only", "--build-timeout", "600",
                 "--build-total-timeout", "3"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 1 and "did not finish within the build's total limit of 3 s and was stopped" in out
    assert "--build-total-timeout" in err and "e.g. --build-timeout 1200" in err


def test_other_errors_still_raise(monkeypatch) -> None:
    from cuda_agent import cli

    assert cli._missing_tool(ValueError("a bug")) is None
    wrapped = RuntimeError("worker failed")
    wrapped.__cause__ = toolchain.ToolchainError("no C++ compiler found")
    assert cli._missing_tool(wrapped) == "no C++ compiler found"
    with pytest.raises(SystemExit):
        main(["no-such-command"])


def test_a_missing_nvcc_in_the_workspace_compile_is_one_line(monkeypatch, tmp_path: Path, capsys) -> None:
    from cuda_agent.task import load_task
    from cuda_agent.workspace import commands, materialize

    example = ROOT / "examples" / "elementwise_chain"
    ws = materialize(load_task(example / "model.py"), tmp_path / "ws")
    for source in (example / "kernels").iterdir():
        (ws / "kernels" / source.name).write_text(source.read_text())
    (ws / "model_new.py").write_text((example / "model_new.py").read_text())

    def nothing_found() -> Path:
        raise toolchain.ToolchainError("nvcc not found: install the CUDA toolkit or set CUDA_HOME")

    monkeypatch.setattr(toolchain, "_find_cuda_home", nothing_found)
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDA_AGENT_SHARED_CACHE", raising=False)
    monkeypatch.chdir(ws)
    toolchain.discover.cache_clear()
    try:
        code = commands.main(["compile"])
    finally:
        toolchain.discover.cache_clear()
    err = capsys.readouterr().err
    assert code == 3 and "cannot build here: nvcc not found" in err and "Traceback" not in err


def test_workspace_commands_outside_the_environment_are_one_line(tmp_path: Path) -> None:
    """`bash utils/compile.sh` and `python3 -m utils.verification` / `utils.profiling` run by a Python that
    cannot import cuda_agent (the system's python3, a venv not activated): one line saying where to run
    them, exit 3 (this machine lacks something), no ModuleNotFoundError traceback."""
    import subprocess
    import sys

    from cuda_agent.task import load_task
    from cuda_agent.workspace import materialize

    ws = materialize(load_task(ROOT / "examples" / "elementwise_chain" / "model.py"), tmp_path / "ws")
    # This interpreter without its site-packages (where the project is installed): a Python without cuda_agent.
    bare = tmp_path / "python3"
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    bare.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "HOME": str(tmp_path)}
    runs = {
        "compile.sh": ["bash", "utils/compile.sh"],
        "verification": [str(bare), "-m", "utils.verification"],
        "profiling": [str(bare), "-m", "utils.profiling"],
    }
    for what, command in runs.items():
        done = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 3, (what, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, (what, done.stderr)
        assert "cannot import cuda_agent" in done.stderr and "source .venv/bin/activate" in done.stderr, done.stderr
    done = subprocess.run(["bash", "utils/compile.sh"], cwd=ws, env={**env, "PYTHON": str(tmp_path / "nothing")},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 3 and "nothing cannot import cuda_agent" in done.stderr
