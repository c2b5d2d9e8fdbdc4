"""The per-episode state tools share: the workspace, the Bash sandbox, background shells, limits."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cuda_agent.agent.tools.paths import Workspace
from cuda_agent.agent.tools.processes import ShellRegistry
from cuda_agent.agent.tools.text import DEFAULT_MAX_OUTPUT_CHARS

if TYPE_CHECKING:
    from cuda_agent.agent.tools.sandbox import Sandbox


@dataclass
class ToolContext:
    """Everything a tool may touch. One per episode; `close()` stops what the episode left running."""

    workspace: Workspace
    sandbox: Sandbox
    shells: ShellRegistry = field(default_factory=ShellRegistry)
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    default_timeout_s: float = 120.0
    max_timeout_s: float = 600.0
    # Seconds left in the episode's wall-clock budget (None: unlimited). Bash never outlives it.
    time_left: Callable[[], float | None] = field(default=lambda: None)
    # Set when the run is stopping (Ctrl-C): a running command is killed instead of waited for.
    cancel: threading.Event = field(default_factory=threading.Event)
    # Physical GPUs Bash commands can touch: each command holds them shared (cuda_agent.gpu_lease), so
    # none runs while a final judgment holds one. open_workspace fills it; () takes no lease.
    gpus: tuple[str, ...] = ()

    def close(self) -> None:
        self.shells.kill_all()

