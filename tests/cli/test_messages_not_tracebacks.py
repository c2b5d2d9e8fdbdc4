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
