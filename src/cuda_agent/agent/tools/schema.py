"""Check a tool call's arguments against the tool's JSON schema before running it.

Models, especially small open ones, get arguments wrong in a handful of predictable ways: a missing
parameter, a misspelt name, a number sent as a string. Catching these here gives one precise message
("missing required parameter 'old_string'") instead of a Python traceback from deep inside a tool.
Only the subset of JSON Schema the tools use is supported: object/array/string/integer/number/boolean,
required, additionalProperties, enum, items, minimum, maximum.

Numeric strings ("20") and boolean strings ("true") are accepted for integer/number/boolean parameters:
the intent is unambiguous and refusing them only costs the model a turn.
"""

from __future__ import annotations

from typing import Any

from cuda_agent.agent.tools.base import ToolError

_JSON_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
}


def validate_args(tool_name: str, schema: dict[str, Any], args: Any) -> dict[str, Any]:
    """Return the arguments with harmless coercions applied, or raise ToolError listing every problem."""
    if not isinstance(args, dict):
        raise ToolError(
            f"Arguments for {tool_name} must be a JSON object, got {_describe(args)}."
        )
    problems: list[str] = []
    value = _check(schema, args, "", problems)
    if problems:
        listed = "; ".join(problems)
        raise ToolError(f"Invalid arguments for {tool_name}: {listed}. Expected parameters: {_signature(schema)}.")
    return value


def _check(schema: dict[str, Any], value: Any, where: str, problems: list[str]) -> Any:
    kind = schema.get("type")
    value = _coerce(kind, value)
    if kind and not _is_type(kind, value):
        problems.append(f"{_name(where)} must be {_JSON_TYPES.get(kind, kind)}, got {_describe(value)}")
        return value
    if "enum" in schema and value not in schema["enum"]:
        options = ", ".join(repr(v) for v in schema["enum"])
        problems.append(f"{_name(where)} must be one of {options}, got {value!r}")
    if kind in ("integer", "number"):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{_name(where)} must be >= {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{_name(where)} must be <= {schema['maximum']}, got {value}")
    if kind == "array":
        items = schema.get("items")
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{_name(where)} needs at least {schema['minItems']} item(s)")
        if items:
            value = [_check(items, item, f"{where}[{i}]", problems) for i, item in enumerate(value)]
    if kind == "object":
        value = _check_object(schema, value, where, problems)
    return value


def _check_object(schema: dict[str, Any], value: dict[str, Any], where: str, problems: list[str]) -> dict:
    properties: dict[str, Any] = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            problems.append(f"missing required parameter {_join(where, key)!r}")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in properties:
            out[key] = _check(properties[key], item, _join(where, key), problems)
        elif schema.get("additionalProperties", True) is False:
            problems.append(f"unknown parameter {_join(where, key)!r}")
        else:
            out[key] = item
    return out


def _coerce(kind: str | None, value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if kind == "integer":
            try:
                return int(text)
            except ValueError:
                return value
        if kind == "number":
            try:
                return float(text) if any(c in text for c in ".eE") else int(text)
            except ValueError:
                return value
        if kind == "boolean" and text.lower() in ("true", "false"):
            return text.lower() == "true"
    if kind == "number" and isinstance(value, bool):
        return value  # rejected below: True is not a number here
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _is_type(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _name(where: str) -> str:
    return f"parameter {where!r}" if where else "the arguments"


def _signature(schema: dict[str, Any]) -> str:
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    parts = [
        f"{key}: {spec.get('type', 'any')}{'' if key in required else ' (optional)'}"
        for key, spec in properties.items()
    ]
    return "{" + ", ".join(parts) + "}"
