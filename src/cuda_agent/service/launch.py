"""`cuda-agent serve` as a child process: started on an ephemeral port, waited for, stopped.

For scripts and tests that need a real judge server of their own on this host (the service benchmark,
the server tests, a local evaluation behind HTTP): the server picks a free port and writes it to a file,
so two of them never race for one; `ServerProcess` waits until it answers, and `stop()` ends it (SIGTERM,
then SIGKILL) whatever state it is in. Its output goes to a log file, never to the caller's terminal.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path


class ServerStartError(RuntimeError):
    """The server exited or did not answer in time; the message ends with its log's tail."""


class ServerProcess:
    """One `cuda-agent serve --port 0` child, serving at `url` once started.

    `args` go to `serve` after the port options (e.g. --token-file, --data-dir, --build-only); `ready`
    is the path polled until it answers 200 (`/v1/health` answers before the judge is warm, `/v1/ready`
    after)."""

    def __init__(self, state_dir: Path, args: Sequence[str], *, env: dict[str, str] | None = None,
                 ready: str = "/v1/ready", timeout_s: float = 180.0, cwd: Path | None = None) -> None:  # fmt: skip
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.state_dir / "server.log"
        port_file = self.state_dir / "port"
        port_file.unlink(missing_ok=True)
        command = [sys.executable, "-m", "cuda_agent.cli", "serve", "--port", "0", "--port-file", str(port_file),
                   *args]  # fmt: skip
        self.url = ""
        self._log = open(self.log_path, "a")  # noqa: SIM115 - closed in stop()/kill()
        self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **(env or {})}, cwd=cwd)  # fmt: skip
        try:
            self._wait(port_file, ready, timeout_s)
        except BaseException:
            self.stop()
            raise

    def _wait(self, port_file: Path, ready: str, timeout_s: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise ServerStartError(f"the server exited with {self.proc.returncode}: {self.log_tail()}")
            if port_file.exists() and port_file.read_text().strip():
                self.url = f"http://127.0.0.1:{port_file.read_text().strip()}"
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(self.url + ready, timeout=5).status_code == 200:
                        return
            if time.monotonic() > deadline:
                raise ServerStartError(f"the server did not answer {ready} within {timeout_s:.0f} s: {self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM, and SIGKILL after `grace_s`; safe to call twice."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()

    def kill(self) -> None:
        """SIGKILL at once (a crash, for restart tests)."""
        self.proc.kill()
        self.proc.wait(10)
        self._log.close()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
