"""The importer's fallback for sources no static reading can determine: run the file, load_inline intercepted.

When a load_inline argument is built from something only running the file computes (a helper function,
a loop, a class attribute), the file's top level, `ModelNew.__init__` and one forward call on the task's
inputs (on the meta device) run in a child process
(eval/capture_child.py) that records each load_inline call's arguments and compiles nothing. The file is
someone else's code, so the child runs as the judge runs a candidate: in the candidate sandbox
(judge/trusted/sandbox.py: an unprivileged user where the machine allows it, no network, rlimits), its
own process group, `python -I` with a scrubbed environment, a private scratch folder holding only a copy
of the file, and a wall-clock limit after which the whole group is killed.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_agent.eval.judges import judge_name

CAPTURE_TIMEOUT_S = 120.0  # importing torch on a busy CPU takes most of it
CHILD = Path(__file__).with_name("capture_child.py")


@dataclass
class Captured:
    """What running the file showed: each load_inline call's arguments and the line that made it, and
    the error that stopped the run (None when the top level and __init__ finished)."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    error_line: int | None = None
    protections: dict[str, str] = field(default_factory=dict)
    forward_error: str | None = None  # what stopped the one forward call on the task's inputs (meta device)
    state_error: str | None = None  # what stopped listing the two models' state_dicts
    model_new_state: list[tuple[str, tuple[int, ...]]] | None = None  # ModelNew's state_dict: key, shape
    model_state: list[tuple[str, tuple[int, ...]]] | None = None  # the reference Model's


def capture(
    path: Path, source: str, reference: str | None = None, timeout: float = CAPTURE_TIMEOUT_S
) -> Captured:
    """Run `source` (the file at `path`) as eval/capture_child.py does, sandboxed; never raises for
    anything the file does."""
    sandbox = judge_name("candidate_sandbox", "trusted.sandbox", "sandbox")()
    scrubbed_env = judge_name("scrubbed_env", "common.procs", "procs")
    kill_group = judge_name("kill_group", "common.procs", "procs")
    marker = f"@@capture-{secrets.token_hex(8)}@@"
    with tempfile.TemporaryDirectory(prefix="cuda-agent-import-") as scratch:
        folder = Path(scratch)
        os.chmod(folder, 0o755)  # the sandbox user must reach its own copy
        copy = folder / Path(path).name.replace("\n", "_")
        copy.write_text(source, encoding="utf-8")
        sandbox.give(folder)
        request = json.dumps({"path": str(copy), "marker": marker, "reference": reference})
        # Its folder stays at its path where the sandbox covers /tmp with a private tmpfs.
        kept = sandbox.own(folder) if hasattr(sandbox, "own") else {}
        env = scrubbed_env({"CUDA_VISIBLE_DEVICES": "", "HOME": str(folder), "TMPDIR": str(folder), **kept})
        start = time.monotonic()
        process = subprocess.Popen([sys.executable, "-I", str(CHILD)], cwd=folder, env=env, text=True,
                                   errors="replace", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True,
                                   preexec_fn=sandbox.preexec())  # fmt: skip
        try:
            stdout, stderr = process.communicate(request, timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(process)
            return Captured(error=f"running it did not finish within {timeout:.0f} s (killed)",
                            protections=sandbox.protections)  # fmt: skip
        finally:
            kill_group(process)  # anything it left running in its group
    answer = next(
        (line[len(marker) :] for line in reversed(stdout.splitlines()) if line.startswith(marker)), None
    )
    if answer is None:
        tail = stderr.strip().splitlines()[-1:] or [f"exit status {process.returncode}"]
        return Captured(error=f"the run ended without an answer after {time.monotonic() - start:.0f} s: "
                        f"{tail[0][:200]}", protections=sandbox.protections)  # fmt: skip
    try:
        data = json.loads(answer)
    except ValueError:
        return Captured(error="the run's answer is not JSON", protections=sandbox.protections)
    return Captured(calls=list(data.get("captures") or []), error=data.get("error"),
                    error_line=data.get("error_line"), protections=sandbox.protections,
                    forward_error=data.get("forward_error"), state_error=data.get("state_error"),
                    model_new_state=_entries(data.get("model_new_state")),
                    model_state=_entries(data.get("model_state")))  # fmt: skip


def _entries(listed: Any) -> list[tuple[str, tuple[int, ...]]] | None:
    if not isinstance(listed, list):
        return None
    return [(str(k), tuple(int(d) for d in shape)) for k, shape in listed]
