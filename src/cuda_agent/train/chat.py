"""Trajectory messages as training messages: the OpenAI chat turns TRL, verl and chat templates read.

A trajectory keeps what the server sent; training wants one shape for every row (parquet columns are
typed): each message has `role`, `content` (a string), `tool_calls` (a list or null) and `tool_call_id`
(a string or null). Tool-call arguments are re-serialised canonically (`json.dumps` of the parsed
object, non-ASCII kept), which is what a chat template's `tojson` prints for them when a server renders
the conversation back, so the model learns the bytes it will be shown. `reasoning_content` is dropped:
servers do not send it back either (the agent's default).
"""

from __future__ import annotations

import json
from typing import Any

ROLES = ("system", "user", "assistant", "tool")


class ChatFormatError(ValueError):
    """A trajectory message that cannot become a training message; the text says which and why."""


def canonical_arguments(arguments: Any) -> str:
    """Tool-call arguments as canonical JSON text; unparseable text is kept as it is."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return json.dumps(arguments, ensure_ascii=False)


def training_message(message: dict[str, Any], index: int = 0) -> dict[str, Any]:
    role = message.get("role")
    if role not in ROLES:
        raise ChatFormatError(f"message {index} has role {role!r}; expected one of {', '.join(ROLES)}")
    content = message.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    out: dict[str, Any] = {"role": role, "content": content if isinstance(content, str) else "",
                           "tool_calls": None, "tool_call_id": None}  # fmt: skip
    if role == "assistant" and message.get("tool_calls"):
        calls = []
        for call in message["tool_calls"]:
            function = call.get("function") or {}
            if not function.get("name"):
                raise ChatFormatError(f"message {index} has a tool call without a function name")
            calls.append({"id": str(call.get("id") or ""), "type": "function",
                          "function": {"name": str(function["name"]),
                                       "arguments": canonical_arguments(function.get("arguments") or "{}")}})  # fmt: skip
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = str(message.get("tool_call_id") or "")
    return out


def training_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """All messages of a trajectory in training shape; the conversation must hold an assistant turn."""
    out = [training_message(m, i) for i, m in enumerate(messages)]
    if not any(m["role"] == "assistant" for m in out):
        raise ChatFormatError("the conversation has no assistant message")
    return out


def chat_tools(tools: Any) -> list[dict[str, Any]]:
    """The tool schemas in OpenAI form ({"type": "function", "function": {...}}), from a record or JSON text."""
    if isinstance(tools, str):
        tools = json.loads(tools)
    return [t if "function" in t else {"type": "function", "function": t} for t in tools or []]
