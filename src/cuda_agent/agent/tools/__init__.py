"""The agent's ten workspace tools and the ToolBox that dispatches a model's tool calls to them.

`ToolBox.execute` is the single place where a tool call from the model is decoded, checked and run, and
it never raises: bad JSON, an unknown tool, wrong arguments, a refusal or even a bug in a tool all come
back as a ToolResult whose message the model can act on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from cuda_agent.agent.tools.base import ERROR, OK, REFUSED, Tool, ToolError, ToolRefused, ToolResult
from cuda_agent.agent.tools.bash import Bash, BashOutput, KillBash
from cuda_agent.agent.tools.context import ToolContext
from cuda_agent.agent.tools.files import Edit, MultiEdit, Read, Write
from cuda_agent.agent.tools.notebook import NotebookEdit
from cuda_agent.agent.tools.paths import DEFAULT_PROTECTED, Workspace
from cuda_agent.agent.tools.sandbox import Sandbox, SandboxPolicy, build_sandbox
from cuda_agent.agent.tools.schema import validate_args
from cuda_agent.agent.tools.search import Glob, Grep

__all__ = [
    "DEFAULT_PROTECTED",
    "ERROR",
    "OK",
    "REFUSED",
    "Sandbox",
    "SandboxPolicy",
    "Tool",
    "ToolBox",
    "ToolContext",
    "ToolError",
    "ToolRefused",
    "ToolResult",
    "Workspace",
    "build_sandbox",
    "default_tools",
]


def default_tools() -> list[Tool]:
    """The ten tools, in the order they are declared to the model."""
    return [Bash(), BashOutput(), KillBash(), Read(), Write(), Edit(), MultiEdit(), Glob(), Grep(), NotebookEdit()]


class ToolBox:
    """Named tools plus the context they run in."""

    def __init__(self, context: ToolContext, tools: Iterable[Tool] | None = None) -> None:
        self.context = context
        self.tools: dict[str, Tool] = {tool.name: tool for tool in (tools or default_tools())}

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema(self.context) for tool in self.tools.values()]

    def parse(self, name: str, arguments: Any) -> tuple[Tool, dict[str, Any]]:
        """Decode and check one call; raises ToolError with a message for the model."""
        tool = self.tools.get(name)
        if tool is None:
            raise ToolError(f"Unknown tool {name!r}. Available tools: {', '.join(self.tools)}.")
        if isinstance(arguments, dict):
            args = arguments
        elif arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            args = {}
        elif isinstance(arguments, str):
            try:
                args = json.loads(arguments)
            except json.JSONDecodeError as e:
                raise ToolError(
                    f"The arguments of {name} are not valid JSON ({e.msg} at character {e.pos}). Send one JSON "
                    'object, e.g. {"file_path": "kernels/my_op.cu"}, with strings escaped properly.'
                ) from e
        else:
            raise ToolError(f"The arguments of {name} must be a JSON object encoded as a string.")
        return tool, validate_args(name, tool.parameters, args)

    def execute(self, name: str, arguments: Any) -> ToolResult:
        """Run one call; always returns a result, never raises (except KeyboardInterrupt)."""
        try:
            tool, args = self.parse(name, arguments)
            return tool.run(args, self.context)
        except ToolError as e:
            return ToolResult(str(e), status=e.status)
        except Exception as e:  # a tool bug must not end the episode; the model sees what happened
            return ToolResult(
                f"{name} failed with an internal error ({type(e).__name__}: {e}). Try another approach.",
                status=ERROR,
                meta={"internal_error": type(e).__name__},
            )

    def summary(self, name: str, arguments: Any) -> str:
        """Short description of a call for progress lines; never raises."""
        try:
            tool, args = self.parse(name, arguments)
        except ToolError:
            return ""
        return tool.summary(args)

    def close(self) -> None:
        self.context.close()
