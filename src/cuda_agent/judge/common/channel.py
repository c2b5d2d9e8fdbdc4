"""Request/response between the judge and its worker processes.

The parent writes one JSON command per line to the worker's stdin and reads one JSON reply per command
from a private pipe (not stdout: task or candidate code may print). The worker's stdout and stderr go to a
log file whose tail is quoted when the worker dies. A worker that dies, hangs or answers garbage raises
`WorkerFailure` with what happened; the caller turns that into a verdict.

Trust boundary: plumbing, no fact of the reward. Both ends are judge code, but the worker end runs in the
candidate's process too, so the parent bounds every reply (size, time, JSON) and treats its contents as claims.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from cuda_agent.judge.common.procs import Limits, kill_group

MAX_REPLY_BYTES = 16 << 20


class WorkerFailure(RuntimeError):
    """A worker died, timed out or broke the protocol. `kind` is "died", "timeout" or "protocol"."""

    def __init__(self, kind: str, message: str, *, signal_name: str | None = None, log_tail: str = ""):
        super().__init__(message)
        self.kind = kind
        self.signal_name = signal_name
        self.log_tail = log_tail


class WorkerHandle:
    """A worker process running `MODULE.main()` in an isolated interpreter (`python -I`).

    `-I` drops PYTHONPATH, user site-packages and the working folder from `sys.path`, so nothing a
    candidate leaves in its folder (a `torch.py`, a `sitecustomize.py`) can shadow a real module; the
    judge's own package root is added back explicitly.
    """

    def __init__(
        self,
        module: str,
        *,
        log_path: Path,
        env: Mapping[str, str],
        cwd: Path,
        limits: Limits | None = None,
        preexec: Callable[[], None] | None = None,
        python: str = sys.executable,
        extra_args: Sequence[str] = (),
    ) -> None:
        read_fd, write_fd = os.pipe()
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - lives as long as the worker
        try:
            self.process = subprocess.Popen(
                [python, "-I", "-c", _bootstrap(module), str(write_fd), *extra_args],
                stdin=subprocess.PIPE,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=dict(env),
                pass_fds=(write_fd,),
                start_new_session=True,
                preexec_fn=preexec or (limits or Limits()).preexec(),
            )
        finally:
            os.close(write_fd)
        self._replies = os.fdopen(read_fd, "rb", buffering=0)
        self._buffer = b""

    @property
    def pid(self) -> int:
        return self.process.pid

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        """Send a command and wait for its reply. Raises WorkerFailure; returns the reply's fields.

        Each request carries a random id the reply must echo, and nothing may arrive on the reply pipe
        unasked: a candidate that writes forged replies into the pipe breaks the protocol and is caught.
        """
        return self.receive(command, self.send(command, **payload), timeout)

    def send(self, command: str, **payload: Any) -> str:
        """Send a command without waiting (one at a time per worker); `receive` its reply later."""
        self._refuse_unasked_data(command)
        request_id = secrets.token_hex(8)
        message = json.dumps({"cmd": command, "id": request_id, **payload}) + "\n"
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(message.encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died(f"before {command}") from None
        return request_id

    def receive(self, command: str, request_id: str, timeout: float) -> dict[str, Any]:
        """Wait for the reply to the request `send` returned `request_id` for."""
        line = self._read_line(timeout, command)
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            self.close()
            raise WorkerFailure("protocol", f"worker sent an unreadable reply to {command}") from None
        if not isinstance(reply, dict) or reply.pop("id", None) != request_id or self._buffer:
            self.close()
            raise WorkerFailure(
                "protocol", f"unexpected data on the judge's reply channel during {command} (forged replies?)"
            )
        return reply

    def _refuse_unasked_data(self, command: str) -> None:
        ready, _, _ = select.select([self._replies], [], [], 0)
        if ready and not self._buffer:
            chunk = self._replies.read(1 << 16)
            if not chunk:
                raise self._died(f"before {command}")
            self._buffer = chunk
        if self._buffer:
            self.close()
            raise WorkerFailure("protocol", f"unasked data on the judge's reply channel before {command}")

    def _read_line(self, timeout: float, command: str) -> bytes:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.close()
                raise WorkerFailure(
                    "timeout", f"{command} did not finish within {timeout:.0f} s", log_tail=self.log_tail()
                )
            ready, _, _ = select.select([self._replies], [], [], min(remaining, 0.5))
            if ready:
                chunk = self._replies.read(1 << 16)
                if not chunk:
                    raise self._died(f"during {command}")
                self._buffer += chunk
                if len(self._buffer) > MAX_REPLY_BYTES:
                    self.close()
                    raise WorkerFailure("protocol", f"worker reply to {command} is too large")
            elif self.process.poll() is not None:
                raise self._died(f"during {command}")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _died(self, when: str) -> WorkerFailure:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        code = self.process.returncode
        tail = self.log_tail()
        self.close()
        signal_name = None
        if code is not None and code < 0:
            import signal

            try:
                signal_name = signal.Signals(-code).name
            except ValueError:
                signal_name = f"signal {-code}"
            what = f"was killed by {signal_name}"
        else:
            what = f"exited with code {code}"
        return WorkerFailure("died", f"process {what} {when}", signal_name=signal_name, log_tail=tail)

    def log_tail(self, chars: int = 3000) -> str:
        with contextlib.suppress(ValueError, OSError):
            self._log.flush()
        try:
            data = self.log_path.read_bytes()[-chars:]
        except OSError:
            return ""
        return data.decode(errors="replace")

    def close(self) -> None:
        """Kill the worker's whole process group. Safe to call twice."""
        if self.process.poll() is None:
            with contextlib.suppress(Exception):
                assert self.process.stdin is not None
                self.process.stdin.close()
        kill_group(self.process)
        with contextlib.suppress(Exception):
            self._replies.close()
        with contextlib.suppress(Exception):
            self._log.close()

    def __enter__(self) -> WorkerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def package_root() -> str:
    """The folder that holds the `cuda_agent` package (src/ in a checkout): workers run `python -I`, which
    ignores PYTHONPATH, so they put it on sys.path themselves where the package is not installed."""
    # This module's dotted name and its path move together: `cuda_agent.judge.common.channel` sits three
    # folders below the one that holds `cuda_agent` (a fixed parent count broke when it moved once).
    return str(Path(__file__).resolve().parents[len(__name__.split(".")) - 1])


def _bootstrap(module: str) -> str:
    package_root_ = package_root()
    return f"import sys; sys.path.insert(0, {package_root_!r}); from {module} import main; main()"


def serve(handlers: Mapping[str, Callable[..., dict[str, Any]]]) -> None:
    """Worker side: answer commands from stdin on the reply fd given as argv[1] until stdin closes.

    stdout is pointed at stderr first so prints from task or candidate code cannot reach the reply pipe
    by accident. An exception in a handler becomes a reply with ok=False and the error text.
    """
    reply_fd = int(sys.argv[1])
    replies: BinaryIO = os.fdopen(reply_fd, "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        command = request.pop("cmd")
        request_id = request.pop("id", None)
        try:
            reply = {"ok": True, **handlers[command](**request)}
        except Exception as exc:
            reply = {
                "ok": False,
                "error": type(exc).__name__,
                "message": str(exc)[:4000],
                "traceback": traceback.format_exc()[-4000:],
            }
        reply["id"] = request_id
        replies.write((json.dumps(reply) + "\n").encode())
        if command == "exit":
            break
    os._exit(0)  # skip interpreter teardown: atexit hooks in candidate code must not run
