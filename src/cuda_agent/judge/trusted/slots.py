"""The slots a worker pool hands out: one warmed candidate process (used once) or one task's reference worker.

Trust boundary: runs in the parent. A slot is the pool's record of a worker it started (trusted/pool.py);
candidate code exists only inside the worker process a CandidateSlot names.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_agent.judge.common.channel import WorkerHandle
from cuda_agent.judge.trusted.freeze import ProcessTree
from cuda_agent.judge.trusted.sandbox import Sandbox


@dataclass
class CandidateSlot:
    """One warmed, sandboxed candidate process and the folder it may write in. Used once."""

    worker: WorkerHandle
    root: Path  # judge-owned scratch of this slot (removed with it)
    folder: Path  # the candidate's cwd/HOME: model_new.py and cuda_extension.so go here
    out_dir: Path  # the only place the candidate writes outputs
    sandbox: Sandbox
    tree: ProcessTree | None = None  # the worker and everything it starts (freeze.py)
    warm_error: str | None = None
    retire: Callable[[CandidateSlot], None] | None = None  # the pool's clean-up after the worker is gone
    # Seconds each part of close() took: the worker killed and reaped (its CUDA context torn down), the
    # rest of its tree and its cgroup, its files. The next judgment's GPU lock waits for all of it.
    close_seconds: dict[str, float] = field(default_factory=dict)

    def kill(self) -> None:
        """SIGKILL the worker's process group and every process of its tree, without waiting for any to
        exit: from here on no code of the candidate runs, though the driver may still be tearing its CUDA
        context down (close() waits for that)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.worker.pid, signal.SIGKILL)
        if self.tree is not None:
            self.tree.kill_once()

    def close(self) -> None:
        began = time.monotonic()
        self.worker.close()
        reaped = time.monotonic()
        if self.tree is not None:
            self.tree.close()  # setsid children and double-forked daemons too
        treed = time.monotonic()
        shutil.rmtree(self.root, ignore_errors=True)
        self.close_seconds = {"reap": reaped - began, "tree": treed - reaped, "files": time.monotonic() - treed}
        retire, self.retire = self.retire, None  # once, even if closed twice
        if retire:
            retire(self)


@dataclass
class ReferenceSlot:
    worker: WorkerHandle
    root: Path
    environment: dict | None = None
    warm_error: str | None = None
    broken: bool = False  # set by a judgment whose call to this worker failed
    # The preparation later judgments of this task may reuse (decide/reference_group.py), kept in the
    # worker between them; None: the next judgment prepares afresh.
    group: Any = None

    def close(self) -> None:
        self.worker.close()
        shutil.rmtree(self.root, ignore_errors=True)
