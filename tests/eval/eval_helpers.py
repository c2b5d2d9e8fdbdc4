"""Helpers of the eval tests (imported by name: pytest puts this folder on sys.path): the bundled mini
task set, the scripted solver's server, and a real `cuda-agent serve --build-only` judge server."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "examples" / "kernelbench_mini"
TOKEN = "eval-test-token-" + "y" * 24


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`cuda-agent ...` in a subprocess, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "cuda_agent.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=ROOT)  # fmt: skip


class JudgeServer:
    """`cuda-agent serve --build-only` on an ephemeral port: the CPU checks behind the real HTTP API."""

    def __init__(self, data_dir: Path, workers: int = 2) -> None:
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "tokens").write_text(TOKEN + "\n")
        port_file = data_dir / "port"
        self.log = open(data_dir / "server.log", "a")  # noqa: SIM115 - closed in stop()
        env = {**os.environ, "CUDA_AGENT_CACHE": str(data_dir / "cache"), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cuda_agent.cli", "serve", "--port", "0", "--port-file", str(port_file),
             "--token-file", str(data_dir / "tokens"), "--data-dir", str(data_dir / "data"), "--build-only",
             "--arch", "9.0", "--workers", str(workers)],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=data_dir,
        )  # fmt: skip
        deadline = time.monotonic() + 90
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"judge server exited {self.proc.returncode}: {self.read_log()[-2000:]}")
            if port_file.exists() and port_file.read_text().strip():
                self.url = f"http://127.0.0.1:{port_file.read_text().strip()}"
                try:
                    if httpx.get(self.url + "/v1/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("judge server did not start in time")
            time.sleep(0.2)

    def read_log(self) -> str:
        return (self.data_dir / "server.log").read_text(errors="replace")

    def judgments(self) -> list[tuple[str, int]]:
        """(state, attempts) of every judgment the server ever accepted."""
        db = sqlite3.connect(self.data_dir / "data" / "judgments.sqlite")
        try:
            return db.execute("SELECT state, attempts FROM judgments").fetchall()
        finally:
            db.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
