"""What every tool shares: its JSON-schema declaration, its result, and the errors it may raise.

A tool never crashes the episode. Anything the model did wrong comes back to it as a message it can
act on: `ToolError` for a failed operation, `ToolRefused` for something the workspace rules forbid.
The status of each result ("ok", "error", "refused") is kept in the trajectory so RL code can tell
them apart without parsing text.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cuda_agent.agent.tools.context import ToolContext

OK = "ok"
ERROR = "error"
REFUSED = "refused"


class ToolError(Exception):
    """The operation failed; the message tells the model why and what to try instead."""

    status = ERROR


class ToolRefused(ToolError):
    """The workspace rules forbid the operation (outside the workspace, protected file, ...)."""

    status = REFUSED


@dataclass(frozen=True)
class ToolResult:
    """What goes back to the model (`content`) and what only the trajectory keeps (`meta`).

    `meta` must be deterministic (exit codes, counts, never durations), so that replaying an episode
    gives the same record; timings live in the trajectory's `timings` fields instead.
    """

    content: str
    status: str = OK
    meta: dict[str, Any] = field(default_factory=dict)


class Tool(ABC):
    """One function tool: a name, a description for the model, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def schema(self, ctx: ToolContext | None = None) -> dict[str, Any]:
        """The OpenAI `tools=[...]` entry for this tool (described for `ctx` where that changes the story)."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.describe(ctx), "parameters": self.parameters},
        }

    def describe(self, ctx: ToolContext | None = None) -> str:
        """The description the model reads; tools whose behaviour depends on the sandbox override this."""
        return self.description

    @abstractmethod
    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Execute with validated arguments; raise ToolError/ToolRefused for failures the model caused."""

    def summary(self, args: dict[str, Any]) -> str:
        """A one-line description of a call, for progress displays."""
        for key in ("command", "file_path", "notebook_path", "pattern", "bash_id", "shell_id"):
            if isinstance(args.get(key), str):
                text = " ".join(args[key].split())
                return text if len(text) <= 60 else text[:57] + "..."
        return ""


def obj(properties: dict[str, Any], required: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """A closed JSON-schema object: unknown argument names are rejected, so typos surface as errors."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }
