"""Helpers of the eval tests (imported by name: pytest puts this folder on sys.path): the bundled mini
task set, the scripted solver's server, and a real `cuda-agent serve --build-only` judge server
(tests/service/helpers.py's `Server`, imported rather than copied)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `tests.service` resolves from the repo root, also under a bare `pytest`
    sys.path.insert(0, str(ROOT))

from tests.service.helpers import TOKEN, Server  # noqa: E402, F401 - TOKEN: the server's, for the tests

MINI = ROOT / "examples" / "kernelbench_mini"


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`cuda-agent ...` in a subprocess, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "cuda_agent.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=ROOT)  # fmt: skip


class JudgeServer(Server):
    """`cuda-agent serve --build-only` on an ephemeral port: the CPU checks behind the real HTTP API.
    Started by tests/service's `Server` (one start loop for both suites), plus what the eval tests read."""

    def __init__(self, data_dir: Path, workers: int = 2, cache: Path | None = None) -> None:
        super().__init__(data_dir, "--workers", str(workers), cache=cache)

    def judgments(self) -> list[tuple[str, int]]:
        """(state, attempts) of every judgment the server ever accepted."""
        db = sqlite3.connect(self.data_dir / "data" / "judgments.sqlite")
        try:
            return db.execute("SELECT state, attempts FROM judgments").fetchall()
        finally:
            db.close()
