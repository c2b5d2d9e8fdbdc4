"""Malformed tool calls come back to the model as messages, never as exceptions."""

from __future__ import annotations

import re

import pytest
from agent_helpers import Tools

from cuda_agent.agent.tools import ERROR, OK, Tool, ToolBox, ToolError, default_tools
from cuda_agent.agent.tools.base import obj
from cuda_agent.agent.tools.schema import validate_args

TEN = ["Bash", "BashOutput", "KillBash", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "NotebookEdit"]


def test_the_ten_tools_are_declared_as_closed_json_schemas(tools: Tools) -> None:
    schemas = tools.box.schemas()
    assert [s["function"]["name"] for s in schemas] == TEN
    for schema in schemas:
        assert schema["type"] == "function"
        params = schema["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])
        assert len(schema["function"]["description"]) > 40


def test_unknown_tool(tools: Tools) -> None:
    result = tools.box.execute("Python", '{"code": "1"}')
    assert result.status == ERROR
    assert "Unknown tool 'Python'" in result.content and "Bash" in result.content


@pytest.mark.parametrize("arguments", ['{"file_path": "x"', "not json", '{"a": 1,}'])
def test_arguments_that_are_not_json(tools: Tools, arguments: str) -> None:
    result = tools.box.execute("Read", arguments)
    assert result.status == ERROR
    assert "not valid JSON" in result.content


@pytest.mark.parametrize("arguments", ["[1, 2]", '"model.py"', "42"])
def test_arguments_that_are_json_but_not_an_object(tools: Tools, arguments: str) -> None:
    result = tools.box.execute("Read", arguments)
    assert result.status == ERROR
    assert "must be a JSON object" in result.content


def test_missing_unknown_and_mistyped_parameters_are_all_listed(tools: Tools) -> None:
    result = tools.box.execute("Edit", '{"file_path": 3, "old_sting": "a", "new_string": "b"}')
    assert result.status == ERROR
    text = result.content
    assert "missing required parameter 'old_string'" in text
    assert "unknown parameter 'old_sting'" in text
    assert "parameter 'file_path' must be a string, got number 3" in text
    assert "Expected parameters: {file_path: string, old_string: string" in text


def test_empty_arguments_count_as_an_empty_object(tools: Tools) -> None:
    result = tools.box.execute("Read", "")
    assert result.status == ERROR and "missing required parameter 'file_path'" in result.content


def test_arguments_already_decoded_by_the_server_are_accepted(tools: Tools) -> None:
    result = tools.box.execute("Read", {"file_path": "model_new.py"})
    assert result.status == OK and "class ModelNew" in result.content


def test_a_bug_inside_a_tool_becomes_an_error_result() -> None:
    class Broken(Tool):
        name = "Broken"
        description = "always fails"
        parameters = obj({})

        def run(self, args, ctx):
            raise ZeroDivisionError("boom")

    box = ToolBox(context=None, tools=[Broken()])  # type: ignore[arg-type]
    result = box.execute("Broken", "{}")
    assert result.status == ERROR
    assert "internal error (ZeroDivisionError: boom)" in result.content
    assert result.meta == {"internal_error": "ZeroDivisionError"}


def test_schema_coercions_and_constraints() -> None:
    schema = obj(
        {
            "n": {"type": "integer", "minimum": 1},
            "x": {"type": "number"},
            "flag": {"type": "boolean"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "items": {"type": "array", "minItems": 1, "items": obj({"k": {"type": "string"}}, ["k"])},
        },
        ["n"],
    )
    assert validate_args("T", schema, {"n": "3", "x": "2.5", "flag": "true"}) == {"n": 3, "x": 2.5, "flag": True}
    assert validate_args("T", schema, {"n": 2.0}) == {"n": 2}
    for bad, message in [
        ({"n": 0}, "must be >= 1"),
        ({"n": "three"}, "must be an integer"),
        ({"n": True}, "must be an integer, got boolean true"),
        ({"n": 1, "mode": "c"}, "must be one of 'a', 'b'"),
        ({"n": 1, "items": []}, "needs at least 1 item"),
        ({"n": 1, "items": [{"j": "x"}]}, "missing required parameter 'items[0].k'"),
        ({"n": 1, "flag": "maybe"}, "must be a boolean"),
    ]:
        with pytest.raises(ToolError, match=re.escape(message)):
            validate_args("T", schema, bad)


def test_default_tools_have_unique_names() -> None:
    names = [t.name for t in default_tools()]
    assert len(names) == len(set(names)) == 10
