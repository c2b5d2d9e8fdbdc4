"""NotebookEdit: replace, insert and delete cells; refusals and bad addresses."""

from __future__ import annotations

import json

import pytest
from agent_helpers import Tools

from cuda_agent.agent.tools import ERROR, OK, REFUSED


@pytest.fixture
def notebook(tools: Tools):
    nb = {
        "cells": [
            {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n"]},
            {"cell_type": "code", "id": "run", "metadata": {}, "source": ["print(1)\n"], "execution_count": 3,
             "outputs": [{"output_type": "stream", "text": ["1\n"]}]},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    path = tools.root / "bench.ipynb"
    path.write_text(json.dumps(nb))
    return path


def cells(path):
    return json.loads(path.read_text())["cells"]


def test_replace_a_cell_clears_stale_outputs(tools: Tools, notebook) -> None:
    result = tools.call("NotebookEdit", notebook_path="bench.ipynb", cell_id="run", new_source="a = 1\nprint(a)")
    assert result.status == OK
    cell = cells(notebook)[1]
    assert cell["source"] == ["a = 1\n", "print(a)"]
    assert cell["outputs"] == [] and cell["execution_count"] is None


def test_replace_can_change_the_cell_type(tools: Tools, notebook) -> None:
    tools.call("NotebookEdit", notebook_path="bench.ipynb", cell_id="run", new_source="text", cell_type="markdown")
    cell = cells(notebook)[1]
    assert cell["cell_type"] == "markdown" and "outputs" not in cell and "execution_count" not in cell


def test_insert_after_a_cell_or_at_the_start_with_deterministic_ids(tools: Tools, notebook) -> None:
    after = tools.call("NotebookEdit", notebook_path="bench.ipynb", cell_id="intro", new_source="x = 2",
                       cell_type="code", edit_mode="insert")  # fmt: skip
    assert after.status == OK and "position 1" in after.content
    first = tools.call("NotebookEdit", notebook_path="bench.ipynb", new_source="# Top", cell_type="markdown",
                       edit_mode="insert")  # fmt: skip
    assert "position 0" in first.content
    result = cells(notebook)
    assert [c["source"] for c in result] == [["# Top"], ["# Title\n"], ["x = 2"], ["print(1)\n"]]
    assert result[2]["outputs"] == [] and len(result[2]["id"]) == 8
    assert result[2]["id"] in after.content
    needs_type = tools.call("NotebookEdit", notebook_path="bench.ipynb", new_source="y", edit_mode="insert")
    assert needs_type.status == ERROR and "cell_type" in needs_type.content


def test_delete_and_positional_ids(tools: Tools, notebook) -> None:
    result = tools.call("NotebookEdit", notebook_path="bench.ipynb", cell_id="cell-0", new_source="",
                        edit_mode="delete")  # fmt: skip
    assert result.status == OK and "1 cell(s) remain" in result.content
    assert [c["id"] for c in cells(notebook)] == ["run"]


def test_bad_addresses_and_files(tools: Tools, notebook) -> None:
    unknown = tools.call("NotebookEdit", notebook_path="bench.ipynb", cell_id="nope", new_source="x")
    assert unknown.status == ERROR and "its cells are: intro, run" in unknown.content
    no_id = tools.call("NotebookEdit", notebook_path="bench.ipynb", new_source="x")
    assert no_id.status == ERROR and "cell_id is required" in no_id.content
    (tools.root / "plain.py").write_text("x")
    assert "not a notebook" in tools.call("NotebookEdit", notebook_path="plain.py", new_source="x").content
    (tools.root / "broken.ipynb").write_text("{not json")
    broken = tools.call("NotebookEdit", notebook_path="broken.ipynb", cell_id="0", new_source="x")
    assert broken.status == ERROR and "not a valid notebook" in broken.content
    missing = tools.call("NotebookEdit", notebook_path="none.ipynb", cell_id="0", new_source="x")
    assert missing.status == ERROR and "does not exist" in missing.content


def test_refusals(tools: Tools, notebook) -> None:
    (tools.root / "utils" / "nb.ipynb").write_text(notebook.read_text())
    protected = tools.call("NotebookEdit", notebook_path="utils/nb.ipynb", cell_id="run", new_source="x")
    assert protected.status == REFUSED
    outside = tools.call("NotebookEdit", notebook_path="/tmp/x.ipynb", cell_id="run", new_source="x")
    assert outside.status == REFUSED
