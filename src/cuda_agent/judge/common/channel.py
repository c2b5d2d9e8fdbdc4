"""Request/response between the judge and its worker processes.

The parent writes one JSON command per line to the worker's stdin and reads one JSON reply per command
from a private socket (not stdout: task or candidate code may print). The worker's stdout and stderr go to a
log file whose tail is quoted when the worker dies. A worker that dies, hangs or answers garbage raises
`WorkerFailure` with what happened; the caller turns that into a verdict.

The reply socket is an AF_UNIX SOCK_SEQPACKET pair whose parent end asks the kernel to stamp every
message with the time it was sent (SO_TIMESTAMPNS). `WorkerHandle.last_round_trip_ms` is the time from
writing a command to the kernel's stamp on the message that completed its reply: the host clock the
timing stage bounds every round with (decide/stats.py). The parent's own clock read after the reply
also counts the parent's delays in noticing it -- waiting for the GIL while another thread of the judge
runs Python (a build's static checks, the service's handlers: up to the 5 ms switch interval per wake-up),
or for a core -- which charged honest launch-bound rounds at random whenever the judge was busy beside
a timing. The stamp is the kernel's: the worker cannot forge it, only send its reply later.

Trust boundary: plumbing, no fact of the reward. Both ends are judge code, but the worker end runs in the
candidate's process too, so the parent bounds every reply (size, time, JSON) and treats its contents as claims.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from cuda_agent.judge.common.procs import Limits, kill_group

MAX_REPLY_BYTES = 16 << 20
# One message of the reply socket: a reply is written in pieces of at most this many bytes (a
# SOCK_SEQPACKET message must fit the socket's send buffer), and a larger message is a protocol failure.
REPLY_CHUNK_BYTES = 16 << 10
_RECEIVE_BYTES = 64 << 10
# SO_TIMESTAMPNS: Python names it only on some builds; 35 on Linux (asm-generic/socket.h).
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
# Room for the timestamp and for a few descriptors a worker might pass (they are closed, and refused).
_ANCILLARY_BYTES = socket.CMSG_SPACE(16) + socket.CMSG_SPACE(64 * 4)
# A kernel stamp further than this from the parent's own clock (a wall-clock step during the call) is
# not used: the parent's clock, which can only be later, stands instead.
_CLOCK_AGREEMENT_MS = 1.0


class WorkerFailure(RuntimeError):
    """A worker died, timed out or broke the protocol. `kind` is "died", "timeout" or "protocol"."""

    def __init__(self, kind: str, message: str, *, signal_name: str | None = None, log_tail: str = ""):
        super().__init__(message)
        self.kind = kind
        self.signal_name = signal_name
        self.log_tail = log_tail


class PauseClock:
    """Seconds a worker spent frozen by the judge (trusted/lane_share.py: a timing freezes the other
    judgment's workers mid-call at depth 2 with `lane_preempt`). A reply's time limit is the worker's own
    running time: time it was held stopped by the judge is not the worker's, and counting it would turn a
    sibling's long timing into a timeout of an honest call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held = 0.0
        self._since: float | None = None  # a pause under way
        self._depth = 0

    def begin(self) -> None:
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                self._since = time.monotonic()

    def end(self) -> None:
        with self._lock:
            self._depth = max(0, self._depth - 1)
            if self._depth == 0 and self._since is not None:
                self._held += time.monotonic() - self._since
                self._since = None

    def total(self) -> float:
        """Seconds paused so far, the pause under way included."""
        with self._lock:
            return self._held + (time.monotonic() - self._since if self._since is not None else 0.0)


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
        replies, worker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        replies.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        replies.shutdown(socket.SHUT_WR)  # the worker's end only sends: nothing reaches it this way
        write_fd = worker_end.fileno()
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
        except BaseException:
            replies.close()
            raise
        finally:
            worker_end.close()
        self._replies = replies
        self._buffer = b""
        # Clocks of the last exchange (send, the kernel's stamp on its reply, the parent's noticing it).
        self._sent_ns = self._sent_perf = 0
        self._reply_stamp_ns: int | None = None
        self._noticed_perf = 0
        self.pauses: PauseClock | None = None  # set while the judge may freeze it mid-call (PauseClock)

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
        message = (json.dumps({"cmd": command, "id": request_id, **payload}) + "\n").encode()
        self._reply_stamp_ns = None
        try:
            assert self.process.stdin is not None
            fd = self.process.stdin.fileno()  # unbuffered: the clock starts as the bytes go
            # Read right before the write: a GIL hand-over between the two can only make a round look
            # longer (read after it, a wait for the GIL on the way back could make it look shorter).
            self._sent_perf, self._sent_ns = time.perf_counter_ns(), time.time_ns()
            view = memoryview(message)
            while view:
                view = view[os.write(fd, view) :]
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

    @property
    def last_reply_stamped(self) -> bool:
        """Whether `last_round_trip_ms` ends at the kernel's stamp (else at the parent's reading)."""
        return self._round_trip()[1]

    @property
    def last_round_trip_ms(self) -> float:
        """Milliseconds from writing the last command to the kernel's stamp on the message that completed
        its reply; the parent's own clock where there is no usable stamp (it can only be later)."""
        return self._round_trip()[0]

    def _round_trip(self) -> tuple[float, bool]:
        noticed_ms = (self._noticed_perf - self._sent_perf) / 1e6
        if self._reply_stamp_ns is None:
            return noticed_ms, False
        stamped_ms = (self._reply_stamp_ns - self._sent_ns) / 1e6
        if not -_CLOCK_AGREEMENT_MS <= stamped_ms <= noticed_ms + _CLOCK_AGREEMENT_MS:
            return noticed_ms, False  # the wall clock stepped during the call
        return min(max(stamped_ms, 0.0), noticed_ms), True

    def _receive_message(self, when: str) -> tuple[bytes, int | None]:
        """One message of the reply socket and the kernel's stamp on it. A worker that passes descriptors
        (they are closed at once), sends a message larger than a reply piece or closes its end fails."""
        try:
            data, ancillary, flags, _ = self._replies.recvmsg(_RECEIVE_BYTES, _ANCILLARY_BYTES)
        except OSError:
            raise self._died(when) from None
        stamp, passed = None, []
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(payload) >= 16:
                seconds, nanoseconds = struct.unpack("qq", payload[:16])
                stamp = seconds * 1_000_000_000 + nanoseconds
            elif level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                passed += struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) // 4 * 4])
        for fd in passed:
            with contextlib.suppress(OSError):
                os.close(fd)
        if passed or flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            self.close()
            raise WorkerFailure("protocol", f"the worker sent descriptors or an oversized message {when}")
        if not data:
            raise self._died(when)
        return data, stamp

    def _refuse_unasked_data(self, command: str) -> None:
        ready, _, _ = select.select([self._replies], [], [], 0)
        if ready and not self._buffer:
            self._buffer, _ = self._receive_message(f"before {command}")
        if self._buffer:
            self.close()
            raise WorkerFailure("protocol", f"unasked data on the judge's reply channel before {command}")

    def _read_line(self, timeout: float, command: str) -> bytes:
        deadline = time.monotonic() + timeout
        pauses = self.pauses  # time the judge holds this worker frozen extends the deadline
        paused_before = pauses.total() if pauses is not None else 0.0
        while b"\n" not in self._buffer:
            paused = pauses.total() - paused_before if pauses is not None else 0.0
            remaining = deadline + paused - time.monotonic()
            if remaining <= 0:
                self.close()
                raise WorkerFailure(
                    "timeout", f"{command} did not finish within {timeout:.0f} s", log_tail=self.log_tail()
                )
            ready, _, _ = select.select([self._replies], [], [], min(remaining, 0.5))
            if ready:
                chunk, stamp = self._receive_message(f"during {command}")
                self._noticed_perf = time.perf_counter_ns()
                if b"\n" in chunk:  # the message that completes the reply: its stamp is the reply's time
                    self._reply_stamp_ns = stamp
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
        if code is None:  # alive, but its reply channel ended: closed, or an empty message sent on it
            return WorkerFailure("protocol", f"the worker closed its reply channel {when}", log_tail=tail)
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
    replies: BinaryIO = os.fdopen(reply_fd, "wb", buffering=0)  # a SOCK_SEQPACKET end: a write is one message
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
        data = memoryview((json.dumps(reply) + "\n").encode())
        for at in range(0, len(data), REPLY_CHUNK_BYTES):
            replies.write(data[at : at + REPLY_CHUNK_BYTES])
        if command == "exit":
            break
    os._exit(0)  # skip interpreter teardown: atexit hooks in candidate code must not run
