"""Bash, BashOutput and KillBash: shell commands in the sandboxed workspace, foreground or background.

A timeout kills the command's whole process group, and so does the end of a foreground command, so
nothing it started in the background outlives it unnoticed. Long-running processes belong in
`run_in_background`, whose shells live until KillBash or the end of the episode.
"""

from __future__ import annotations

import contextlib
import re
import signal
from typing import Any

from cuda_agent.agent.tools.base import Tool, ToolError, ToolResult, obj
from cuda_agent.agent.tools.context import ToolContext
from cuda_agent.agent.tools.processes import Process
from cuda_agent.agent.tools.text import read_head_tail
from cuda_agent.gpu_lease import SHARED, Lease, LeaseCancelled, LeaseError, acquire, default_timeout

GPU_WAIT_NOTE_S = 1.0  # a command that waited this long for the GPU says so in its output


def _gpu_lease(ctx: ToolContext, what: str) -> Lease:
    """The GPUs shared for one command (cuda_agent.gpu_lease): it waits while a final judgment holds one,
    at most until the episode's time is up; a command that cannot get them does not run."""
    left = ctx.time_left()
    bound = default_timeout() if left is None else max(1.0, min(default_timeout(), left))
    try:
        return acquire(ctx.gpus, SHARED, timeout_s=bound, what=what, cancel=ctx.cancel)
    except LeaseCancelled as e:
        raise ToolError(f"The command did not run: {e}.") from e
    except LeaseError as e:
        raise ToolError(f"The command did not run: {e}. Try it again later.") from e


def _status(process: Process) -> str:
    code = process.popen.poll()
    if code is None:
        return "running"
    if process.killed:
        return "killed"
    return f"exited with code {code}"


def _exit_note(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"[killed by signal {signal.Signals(-code).name}]"
        return f"[killed by signal {-code}]"
    if code > 128 and code - 128 in (signal.SIGKILL, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGSEGV):
        return f"[exit code {code}: killed by {signal.Signals(code - 128).name}]"
    return f"[exit code {code}]"


class Bash(Tool):
    name = "Bash"
    description = (
        "Run a bash command in the workspace (the current directory) and return its combined stdout and "
        "stderr. {sandbox} Commands time out after `timeout` milliseconds (default 120000, max 600000); on "
        "timeout the command and everything it started are killed. Processes a command leaves in the "
        "background are killed when it returns: for long-running jobs set run_in_background, then read "
        "their output with BashOutput and stop them with KillBash. Long output is truncated in the "
        "middle. Prefer Read/Write/Edit/Grep/Glob over cat/sed/echo/grep/find for files."
    )
    # Without a context (schemas listed outside an episode) the sandbox is unknown, and said to be.
    UNKNOWN_SANDBOX = "Whether commands are confined depends on the sandbox of the episode."

    def describe(self, ctx: ToolContext | None = None) -> str:
        sandbox = ctx.sandbox.describe() if ctx is not None else self.UNKNOWN_SANDBOX
        return self.description.format(sandbox=sandbox)

    parameters = obj(
        {
            "command": {"type": "string", "description": "The command to run."},
            "timeout": {
                "type": "number",
                "description": "Timeout in milliseconds (max 600000).",
                "minimum": 1,
            },
            "description": {
                "type": "string",
                "description": "What the command does, in 5-10 words (shown in progress displays).",
            },
            "run_in_background": {
                "type": "boolean",
                "description": "Start the command in the background and return a shell id at once.",
            },
        },
        ["command"],
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = args["command"]
        if not command.strip():
            raise ToolError("The command is empty.")
        if args.get("run_in_background"):
            lease = _gpu_lease(ctx, "a background shell")  # held until the shell ends (ShellRegistry)
            try:
                shell_id = ctx.shells.start(ctx.sandbox, command, lease=lease)
            except BaseException:
                lease.release()
                raise
            return ToolResult(
                f"Started background shell {shell_id}. Read its output with BashOutput "
                f"(bash_id={shell_id!r}) and stop it with KillBash (shell_id={shell_id!r}).",
                meta={"shell_id": shell_id, **({"gpu_wait_s": round(lease.waited_s, 3)} if ctx.gpus else {})},
            )
        timeout_s, limited_by = self._timeout(args, ctx)
        with _gpu_lease(ctx, "a tool command") as lease:  # the command and all it started, then released
            process = Process(ctx.sandbox, command, ctx.shells.log_file())
            code = process.wait(timeout_s, ctx.cancel)
            process.kill_group()  # stragglers of a finished command, or the whole command on timeout
        output, cut, _ = read_head_tail(process.log_path, 0, ctx.max_output_chars)
        with contextlib.suppress(OSError):
            process.log_path.unlink()
        parts = [output.rstrip("\n")] if output.strip() else ["(no output)"]
        if lease.waited_s >= GPU_WAIT_NOTE_S:
            parts.insert(0, f"[waited {lease.waited_s:.0f} s for the GPU: a final judgment was using it]")
        meta: dict[str, Any] = {"exit_code": code, "timed_out": code is None}
        if ctx.gpus:
            meta["gpu_wait_s"] = round(lease.waited_s, 3)
        if cut:
            meta["truncated_chars"] = cut
        if code is None and ctx.cancel.is_set():
            parts.append("[stopped: the run was cancelled; the command and every process it started were killed]")
            return ToolResult("\n".join(parts), status="error", meta={**meta, "timed_out": False, "cancelled": True})
        if code is None:
            parts.append(
                f"[timed out after {timeout_s:g} s ({limited_by}); the command and every process it started "
                "were killed. Use run_in_background for long-running jobs.]"
            )
            return ToolResult("\n".join(parts), status="error", meta=meta)
        if code != 0:
            parts.append(_exit_note(code))
        return ToolResult("\n".join(parts), meta=meta)

    @staticmethod
    def _timeout(args: dict[str, Any], ctx: ToolContext) -> tuple[float, str]:
        timeout_s = ctx.default_timeout_s
        limited_by = "the default timeout"
        if "timeout" in args:
            timeout_s = float(args["timeout"]) / 1000.0
            limited_by = "the requested timeout"
        if timeout_s > ctx.max_timeout_s:
            timeout_s, limited_by = ctx.max_timeout_s, "the maximum timeout"
        left = ctx.time_left()
        if left is not None and left < timeout_s:
            timeout_s, limited_by = max(left, 1.0), "the episode's remaining time"
        return timeout_s, limited_by

    def summary(self, args: dict[str, Any]) -> str:
        description = args.get("description")
        if isinstance(description, str) and description.strip():
            return description.strip()[:60]
        return super().summary(args)


class BashOutput(Tool):
    name = "BashOutput"
    description = (
        "Read the output a background shell (started by Bash with run_in_background) produced since the "
        "last read, and its status (running, exited with code N, killed). `filter` is an optional regular "
        "expression: only matching lines are returned and the others are discarded."
    )
    parameters = obj(
        {
            "bash_id": {"type": "string", "description": "The shell id returned by Bash, e.g. bash_1."},
            "filter": {"type": "string", "description": "Optional regular expression to keep matching lines."},
        },
        ["bash_id"],
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        shell_id = args["bash_id"]
        process = ctx.shells.get(shell_id)
        pattern = None
        if args.get("filter"):
            try:
                pattern = re.compile(args["filter"])
            except re.error as e:
                raise ToolError(f"Invalid filter regular expression {args['filter']!r}: {e}.") from e
        status = _status(process)  # before reading: output of an exited shell is then complete
        text, cut = ctx.shells.read_new(shell_id, ctx.max_output_chars)
        if pattern is not None:
            text = "\n".join(line for line in text.splitlines() if pattern.search(line))
        body = text.rstrip("\n") if text.strip() else "(no new output)"
        meta: dict[str, Any] = {"shell_status": status}
        if cut:
            meta["truncated_chars"] = cut
        return ToolResult(f"[shell {shell_id}: {status}]\n{body}", meta=meta)


class KillBash(Tool):
    name = "KillBash"
    description = "Stop a background shell started by Bash with run_in_background, and everything it started."
    parameters = obj(
        {"shell_id": {"type": "string", "description": "The shell id to stop, e.g. bash_1."}},
        ["shell_id"],
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        shell_id = args["shell_id"]
        process = ctx.shells.get(shell_id)
        status = _status(process)
        if status != "running":
            process.kill_group()  # anything it left behind
            return ToolResult(f"Shell {shell_id} had already stopped ({status}).", meta={"shell_status": status})
        process.kill()
        return ToolResult(f"Killed shell {shell_id}.", meta={"shell_status": "killed"})
