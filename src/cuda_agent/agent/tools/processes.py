"""Processes of sandboxed shell commands, and the background shells of an episode.

Output goes to a log file rather than a pipe: a command that leaves a child holding the pipe open can
never hang the agent, and a runaway writer costs disk (capped by RLIMIT_FSIZE), not memory, because only
the head and tail of the log are ever read. Every command gets its own process group (and, with
bubblewrap, its own PID namespace), so one killpg reaches everything it started.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from cuda_agent.agent.tools.base import ToolError
from cuda_agent.agent.tools.sandbox import Sandbox
from cuda_agent.agent.tools.text import read_head_tail
from cuda_agent.gpu_lease import Lease

MAX_BACKGROUND_SHELLS = 8


class Process:
    """One sandboxed `bash -c` with its output logged to `log_path`."""

    def __init__(self, sandbox: Sandbox, script: str, log_path: Path) -> None:
        self.log_path = log_path
        self.killed = False
        with open(log_path, "wb") as log:
            self.popen = subprocess.Popen(
                sandbox.argv(script),
                cwd=sandbox.cwd,
                env=sandbox.env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own session and process group: killpg reaches everything
                preexec_fn=sandbox.preexec_fn(),  # None unless prlimit is missing
            )

    def wait(self, timeout: float, cancel: threading.Event | None = None) -> int | None:
        """The exit code, or None if `timeout` passed or `cancel` was set first."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or (cancel is not None and cancel.is_set()):
                return self.popen.poll()
            try:
                return self.popen.wait(timeout=min(left, 0.25) if cancel is not None else left)
            except subprocess.TimeoutExpired:
                continue

    def kill_group(self) -> None:
        """SIGKILL the process group; the group id is the leader's pid even after the leader exits."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=10)

    def kill(self) -> None:
        self.killed = self.popen.poll() is None
        self.kill_group()


def _release_at_exit(process: Process, lease: Lease) -> None:
    process.popen.wait()
    lease.release()


class ShellRegistry:
    """Background shells of one episode, with stable ids (bash_1, bash_2, ...) and read offsets."""

    def __init__(self) -> None:
        self._dir: Path | None = None
        self._shells: dict[str, Process] = {}
        self._offsets: dict[str, int] = {}
        self._counter = 0
        self._logs = 0
        self._leases: dict[str, Lease] = {}
        self._lock = threading.Lock()

    def log_file(self, stem: str | None = None) -> Path:
        """A fresh log path in this episode's private folder (outside the workspace)."""
        with self._lock:
            if stem is None:
                self._logs += 1
                stem = f"foreground_{self._logs}"
            if self._dir is None:
                self._dir = Path(tempfile.mkdtemp(prefix="cuda-agent-shells-"))
            return self._dir / f"{stem}.log"

    def start(self, sandbox: Sandbox, script: str, lease: Lease | None = None) -> str:
        """Start a background shell; `lease` (its GPUs, shared) is released as soon as the shell ends."""
        running = sum(1 for p in self._shells.values() if p.popen.poll() is None)
        if running >= MAX_BACKGROUND_SHELLS:
            raise ToolError(
                f"{running} background shells are already running (the limit is {MAX_BACKGROUND_SHELLS}); "
                "stop one with KillBash first."
            )
        with self._lock:
            self._counter += 1
            shell_id = f"bash_{self._counter}"
        process = Process(sandbox, script, self.log_file(shell_id))
        self._shells[shell_id] = process
        self._offsets[shell_id] = 0
        if lease is not None:
            self._leases[shell_id] = lease
            threading.Thread(target=_release_at_exit, args=(process, lease), daemon=True,
                             name=f"lease-{shell_id}").start()  # fmt: skip
        return shell_id

    def get(self, shell_id: str) -> Process:
        if shell_id not in self._shells:
            known = ", ".join(self._shells) or "none started yet"
            raise ToolError(f"No background shell with id {shell_id!r} (known shells: {known}).")
        return self._shells[shell_id]

    def read_new(self, shell_id: str, limit: int) -> tuple[str, int]:
        process = self.get(shell_id)
        text, cut, end = read_head_tail(process.log_path, self._offsets[shell_id], limit)
        self._offsets[shell_id] = end
        return text, cut

    def kill_all(self) -> None:
        for shell_id, process in self._shells.items():
            process.kill_group()
            if shell_id in self._leases:  # now, not when the watcher wakes: the judgment comes next
                self._leases.pop(shell_id).release()
        with self._lock:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None
