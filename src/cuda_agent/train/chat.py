"""Trajectory messages as training messages: the OpenAI chat turns TRL, verl and chat templates read.

A trajectory keeps what the server sent; training wants one shape for every row (parquet columns are
typed): each message has `role`, `content` (a string), `tool_calls` (a list or null) and `tool_call_id`
(a string or null). Tool-call arguments are re-serialised canonically (`json.dumps` of the parsed
object, non-ASCII kept), which is what a chat template's `tojson` prints for them when a server renders
the conversation back, so the model learns the bytes it will be shown. `reasoning_content` is dropped:
servers do not send it back either (the agent's default). Tool schemas get back the key order the
agent sent them in (`served_order`), for the same reason: the training row renders what the server renders.
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


def chat_tools(tools: Any, reference: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The tool schemas in OpenAI form ({"type": "function", "function": {...}}), from a record or JSON text,
    with each schema's keys in the order of the `reference` schema of the same name (see `served_order`)."""
    if isinstance(tools, str):
        tools = json.loads(tools)
    wrapped = [t if "function" in t else {"type": "function", "function": t} for t in tools or []]
    by_name = {(r.get("function") or {}).get("name"): r for r in reference or []}
    return [served_order(t, by_name.get(t["function"].get("name"))) for t in wrapped]


def served_order(value: Any, reference: Any) -> Any:
    """`value` with its dict keys in `reference`'s order (keys the reference lacks follow, as they were).

    A trajectory file is written with sorted keys, so a tool schema read back from one has lost the order
    the agent sent it in ({"name", "description", "parameters"} comes back as description, name,
    parameters; the properties alphabetically). Chat templates print schemas with `tojson`, which keeps
    key order, so a row made from the sorted schema renders a different system prompt than the one the
    served model is shown: the model is trained off-distribution. The agent's own schemas are the
    reference; the values stay the record's (a description written for the episode's sandbox is kept).
    """
    if isinstance(value, dict) and isinstance(reference, dict):
        keys = [k for k in reference if k in value] + [k for k in value if k not in reference]
        return {k: served_order(value[k], reference.get(k)) for k in keys}
    if isinstance(value, list) and isinstance(reference, list) and len(value) == len(reference):
        return [served_order(v, r) for v, r in zip(value, reference, strict=True)]
    return value
