"""Running untrusted work in child processes: resource limits, process groups, time limits.

Every compiler and candidate process starts in a new session (its own process group), so a timeout or a
crash kills everything it forked. rlimits bound what one process may take; they are set in the child
between fork and exec. What this does not protect against is listed in the README's security section.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

GIB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """Per-process resource limits. None leaves a limit as inherited."""

    address_space_bytes: int | None = None
    cpu_seconds: int | None = None
    open_files: int | None = 1024
    processes: int | None = None  # RLIMIT_NPROC counts all processes of the user: only for a sandbox user
    file_size_bytes: int | None = 4 * GIB
    core_dump_bytes: int | None = 0

    def preexec(self) -> Callable[[], None]:
        pairs: list[tuple[int, int]] = []
        for limit, value in (
            (resource.RLIMIT_AS, self.address_space_bytes),
            (resource.RLIMIT_CPU, self.cpu_seconds),
            (resource.RLIMIT_NOFILE, self.open_files),
            (resource.RLIMIT_NPROC, self.processes),
            (resource.RLIMIT_FSIZE, self.file_size_bytes),
            (resource.RLIMIT_CORE, self.core_dump_bytes),
        ):
            if value is not None:
                pairs.append((limit, value))

        def apply() -> None:
            for limit, value in pairs:
                with contextlib.suppress(ValueError, OSError):
                    resource.setrlimit(limit, (value, value))

        return apply


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool

    @property
    def signal_name(self) -> str | None:
        if self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None


def kill_group(process: subprocess.Popen) -> None:
    """Kill a child's whole process group, then reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        process.kill()
    with contextlib.suppress(Exception):
        process.wait(timeout=10)


def run_limited(
    command: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float,
    limits: Limits | None = None,
    stdin_text: str | None = None,
    cancel: threading.Event | None = None,
) -> Completed:
    """Run a command in its own process group with limits; on timeout the whole group is killed, and so
    it is as soon as `cancel` is set (a build whose verdict is already decided); that ends with exit
    status -SIGKILL, `timed_out` False."""
    start = time.monotonic()
    process = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
        preexec_fn=(limits or Limits()).preexec(),
    )
    try:
        if cancel is None:
            stdout, stderr = process.communicate(input=stdin_text, timeout=timeout)
        else:
            stdout, stderr = _communicate_unless(process, stdin_text, start + timeout, cancel)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(process)
        stdout, stderr = process.communicate()
        timed_out = not (cancel is not None and cancel.is_set())
    else:
        # Anything the command left running in its group dies with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    return Completed(
        returncode=process.returncode,
        stdout=stdout or "",
        stderr=stderr or "",
        seconds=time.monotonic() - start,
        timed_out=timed_out,
    )


CANCEL_POLL_S = 0.05


def _communicate_unless(
    process: subprocess.Popen, stdin_text: str | None, deadline: float, cancel: threading.Event
) -> tuple[str, str]:
    """`communicate` until `deadline`, looking at `cancel` every CANCEL_POLL_S (retrying loses no output)."""
    first = True
    while True:
        wait = min(CANCEL_POLL_S, deadline - time.monotonic())
        if cancel.is_set() or wait <= 0:
            raise subprocess.TimeoutExpired(process.args, 0)
        try:
            return process.communicate(input=stdin_text if first else None, timeout=wait)
        except subprocess.TimeoutExpired:
            first = False  # input goes once: communicate refuses it again after it started


def scrubbed_env(extra: Mapping[str, str] | None = None, keep: Sequence[str] = ()) -> dict[str, str]:
    """A minimal environment: PATH, locale, CUDA device selection; nothing the caller's shell set."""
    allowed = {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", *keep}
    env = {k: v for k, v in os.environ.items() if k in allowed}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    if extra:
        env.update(extra)
    return env


PR_SET_DUMPABLE = 4


def make_undumpable() -> bool:
    """PR_SET_DUMPABLE 0: from now on /proc/PID/mem and ptrace of this process need CAP_SYS_PTRACE, so
    another process of the same user cannot read or write its memory. The judge's key holder uses it, and
    so does every candidate worker before any candidate code exists: the warm spares wait beside a running
    candidate under the same sandbox user, and one must not be able to plant anything in the next."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def exit_on_sigterm() -> Callable[[], None]:
    """Make SIGTERM end this process with SystemExit (status 143) instead of the default action, so that a
    `with JudgeService(...)` block closes its pools and kills its workers on the way out. The default
    action runs no cleanup: workers live in sessions of their own, so a candidate in an endless kernel most
    likely kept the GPU busy under the next run after `timeout` ended a benchmark (2026-12-07).

    Opt-in, for entry points that own the process (`cuda-agent judge`, `eval`, the device scripts); not
    the server (its jobs resume after a restart, and closing under running lanes would end them) nor a
    library user (training). Only from the main thread and only over the default action. A second
    SIGTERM during the cleanup takes the default action. Returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return lambda: None

    def on_term(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)

    def undo() -> None:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is on_term
        ):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    return undo
