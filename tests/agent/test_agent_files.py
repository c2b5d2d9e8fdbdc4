"""Read, Write, Edit and MultiEdit: the semantics coding agents know, and every refusal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from agent_helpers import Tools

from cuda_agent.agent.tools import ERROR, OK, REFUSED


def write(tools: Tools, rel: str, text: str) -> Path:
    path = tools.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- Read -------------------------------------------------------------------------------------------


def test_read_numbers_lines_like_cat_n(tools: Tools) -> None:
    write(tools, "kernels/a.cu", "first\nsecond\r\nthird\n")
    result = tools.call("Read", file_path="kernels/a.cu")
    assert result.status == OK
    assert result.content == "     1\tfirst\n     2\tsecond\n     3\tthird"
    assert result.meta == {"lines": 3, "first": 1, "last": 3}


def test_read_offset_and_limit_with_a_note_on_what_is_left(tools: Tools) -> None:
    write(tools, "big.txt", "".join(f"line {i}\n" for i in range(1, 101)))
    result = tools.call("Read", file_path="big.txt", offset=10, limit=3)
    assert result.content.splitlines()[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "[showing lines 10-12 of 100; pass offset=13 to read on]" in result.content


def test_read_default_window_is_2000_lines(tools: Tools) -> None:
    write(tools, "huge.txt", "x\n" * 2500)
    result = tools.call("Read", file_path="huge.txt")
    assert "[showing lines 1-2000 of 2500; pass offset=2001" in result.content


def test_read_cuts_long_lines_and_stops_before_flooding_the_context(make_tools) -> None:
    tools = make_tools(max_output_chars=5000)
    write(tools, "wide.txt", ("y" * 3000 + "\n") * 10)
    result = tools.call("Read", file_path="wide.txt")
    assert "[... line cut: 1000 more characters]" in result.content
    assert len(result.content) < 6000
    assert "pass offset=" in result.content


def test_read_missing_file_suggests_files_with_the_same_name(tools: Tools) -> None:
    write(tools, "kernels/relu.cu", "x")
    result = tools.call("Read", file_path="relu.cu")
    assert result.status == ERROR
    assert "File does not exist:" in result.content
    assert f"{tools.ws.display_root}/kernels/relu.cu" in result.content


def test_read_directory_binary_empty_and_past_the_end(tools: Tools) -> None:
    assert "is a directory" in tools.call("Read", file_path="kernels").content
    (tools.root / "lib.so").write_bytes(b"\x7fELF\x00\x01\x02")
    binary = tools.call("Read", file_path="lib.so")
    assert binary.status == ERROR and "is a binary file (7 bytes)" in binary.content
    write(tools, "empty.txt", "")
    empty = tools.call("Read", file_path="empty.txt")
    assert empty.status == OK and "exists but is empty" in empty.content
    write(tools, "short.txt", "a\nb\n")
    past = tools.call("Read", file_path="short.txt", offset=5)
    assert past.status == ERROR and "offset 5 is past the end" in past.content and "2 line(s)" in past.content


def test_read_refuses_outside_and_allows_protected(tools: Tools, tmp_path: Path) -> None:
    outside = tools.call("Read", file_path="/etc/passwd")
    assert outside.status == REFUSED and "outside the workspace" in outside.content
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    os.symlink(secret, tools.root / "kernels" / "peek.txt")
    escape = tools.call("Read", file_path="kernels/peek.txt")
    assert escape.status == REFUSED and "s3cret" not in escape.content
    assert tools.call("Read", file_path="model.py").status == OK


def test_read_shows_notebooks_cell_by_cell(tools: Tools) -> None:
    nb = {"cells": [{"cell_type": "code", "id": "abc", "source": ["x = 1\n", "y = 2"]}], "nbformat": 4,
          "nbformat_minor": 5, "metadata": {}}  # fmt: skip
    write(tools, "n.ipynb", json.dumps(nb))
    result = tools.call("Read", file_path="n.ipynb")
    assert '<cell id="abc" index=0 type="code">' in result.content
    assert "\tx = 1" in result.content and "\ty = 2" in result.content


# -- Write ------------------------------------------------------------------------------------------


def test_write_creates_folders_then_overwrites(tools: Tools) -> None:
    created = tools.call("Write", file_path="kernels/sub/k.cu", content="a\nb\n")
    assert created.status == OK and created.content.startswith("Created") and "(2 lines)" in created.content
    again = tools.call("Write", file_path=f"{tools.ws.display_root}/kernels/sub/k.cu", content="c")
    assert again.content.startswith("Overwrote")
    assert (tools.root / "kernels/sub/k.cu").read_text() == "c"


def test_write_keeps_bytes_exactly(tools: Tools) -> None:
    text = "line\r\nünïcode ✓\n\tTab"
    tools.call("Write", file_path="x.txt", content=text)
    assert (tools.root / "x.txt").read_bytes() == text.encode()


@pytest.mark.parametrize("path", ["model.py", "utils/compile.sh", "utils/extra.py", "binding.cpp",
                                  "binding_registry.h", "SKILL.md"])  # fmt: skip
def test_write_refuses_protected_files(tools: Tools, path: str) -> None:
    before = (tools.root / path).read_text() if (tools.root / path).exists() else None
    result = tools.call("Write", file_path=path, content="hacked")
    assert result.status == REFUSED and "is protected" in result.content
    after = (tools.root / path).read_text() if (tools.root / path).exists() else None
    assert after == before


def test_write_refuses_outside_and_symlink_escapes(tools: Tools, tmp_path: Path) -> None:
    assert tools.call("Write", file_path="../evil.txt", content="x").status == REFUSED
    assert not (tools.root.parent / "evil.txt").exists()
    target = tmp_path / "target.txt"
    target.write_text("original")
    os.symlink(target, tools.root / "kernels" / "out.txt")
    result = tools.call("Write", file_path="kernels/out.txt", content="x")
    assert result.status == REFUSED and "symlink" in result.content
    assert target.read_text() == "original"


def test_write_onto_a_directory_or_under_a_file(tools: Tools) -> None:
    assert "is a directory" in tools.call("Write", file_path="kernels", content="x").content
    write(tools, "plain.txt", "x")
    under = tools.call("Write", file_path="plain.txt/child.txt", content="x")
    assert under.status == ERROR and "parent of it is a file" in under.content


# -- Edit -------------------------------------------------------------------------------------------


def test_edit_replaces_a_unique_string_and_shows_the_result(tools: Tools) -> None:
    write(tools, "k.cu", "int a = 1;\nint b = 2;\nint c = 3;\n")
    result = tools.call("Edit", file_path="k.cu", old_string="int b = 2;", new_string="int b = 20;")
    assert result.status == OK and "replaced 1 occurrence" in result.content
    assert "     2\tint b = 20;" in result.content
    assert (tools.root / "k.cu").read_text() == "int a = 1;\nint b = 20;\nint c = 3;\n"


def test_edit_refuses_ambiguous_strings_unless_replace_all(tools: Tools) -> None:
    write(tools, "k.cu", "x = 0;\ny = 1;\nx = 0;\n")
    ambiguous = tools.call("Edit", file_path="k.cu", old_string="x = 0;", new_string="x = 5;")
    assert ambiguous.status == ERROR and "occurs 2 times" in ambiguous.content and "lines 1, 3" in ambiguous.content
    assert (tools.root / "k.cu").read_text() == "x = 0;\ny = 1;\nx = 0;\n"
    done = tools.call("Edit", file_path="k.cu", old_string="x = 0;", new_string="x = 5;", replace_all=True)
    assert done.status == OK and "replaced 2 occurrences" in done.content
    assert (tools.root / "k.cu").read_text() == "x = 5;\ny = 1;\nx = 5;\n"


def test_edit_not_found_points_at_a_near_miss(tools: Tools) -> None:
    write(tools, "k.cu", "    float v = x[i];\n")
    result = tools.call("Edit", file_path="k.cu", old_string="float v = x[i];  ", new_string="y")
    assert result.status == ERROR and "was not found" in result.content
    assert "resembles line 1" in result.content


def test_edit_identical_strings_and_empty_old_string(tools: Tools) -> None:
    write(tools, "k.cu", "abc")
    same = tools.call("Edit", file_path="k.cu", old_string="abc", new_string="abc")
    assert same.status == ERROR and "identical" in same.content
    empty = tools.call("Edit", file_path="k.cu", old_string="", new_string="x")
    assert empty.status == ERROR and "old_string is empty" in empty.content
    created = tools.call("Edit", file_path="kernels/new.cu", old_string="", new_string="// new\n")
    assert created.status == OK and created.content.startswith("Created")
    assert (tools.root / "kernels/new.cu").read_text() == "// new\n"
    missing = tools.call("Edit", file_path="kernels/none.cu", old_string="a", new_string="b")
    assert missing.status == ERROR and "does not exist" in missing.content


def test_edit_refusals(tools: Tools) -> None:
    protected = tools.call("Edit", file_path="model.py", old_string="import torch", new_string="import os")
    assert protected.status == REFUSED
    assert "import torch" in (tools.root / "model.py").read_text()
    assert tools.call("Edit", file_path="/tmp/x", old_string="a", new_string="b").status == REFUSED
    (tools.root / "blob.bin").write_bytes(b"\x00\x01abc")
    binary = tools.call("Edit", file_path="blob.bin", old_string="abc", new_string="x")
    assert binary.status == ERROR and "binary" in binary.content


# -- MultiEdit --------------------------------------------------------------------------------------


def test_multiedit_applies_edits_in_order(tools: Tools) -> None:
    write(tools, "k.cu", "alpha beta gamma\n")
    result = tools.call("MultiEdit", file_path="k.cu", edits=[
        {"old_string": "alpha", "new_string": "ALPHA"},
        {"old_string": "ALPHA beta", "new_string": "AB"},  # sees the first edit's result
        {"old_string": "a", "new_string": "4", "replace_all": True},
    ])  # fmt: skip
    assert result.status == OK and "applied 3 edit(s), 4 replacement(s)" in result.content
    assert (tools.root / "k.cu").read_text() == "AB g4mm4\n"


def test_multiedit_is_all_or_nothing(tools: Tools) -> None:
    write(tools, "k.cu", "one two three\n")
    result = tools.call("MultiEdit", file_path="k.cu", edits=[
        {"old_string": "one", "new_string": "1"},
        {"old_string": "four", "new_string": "4"},
    ])  # fmt: skip
    assert result.status == ERROR
    assert "Edit 2 of 2 failed" in result.content and "No edits were applied" in result.content
    assert (tools.root / "k.cu").read_text() == "one two three\n"


def test_multiedit_can_create_a_file_and_is_refused_on_protected(tools: Tools) -> None:
    created = tools.call("MultiEdit", file_path="kernels/m.cu", edits=[
        {"old_string": "", "new_string": "int x;\n"}, {"old_string": "x", "new_string": "y"}])  # fmt: skip
    assert created.status == OK and (tools.root / "kernels/m.cu").read_text() == "int y;\n"
    refused = tools.call("MultiEdit", file_path="binding.cpp", edits=[{"old_string": "fixed", "new_string": "x"}])
    assert refused.status == REFUSED and (tools.root / "binding.cpp").read_text() == "// fixed\n"
    outside = tools.call("MultiEdit", file_path="../m.cu", edits=[{"old_string": "", "new_string": "x"}])
    assert outside.status == REFUSED and not (tools.root.parent / "m.cu").exists()
    empty = tools.call("MultiEdit", file_path="kernels/m.cu", edits=[])
    assert empty.status == ERROR and "needs at least 1 item" in empty.content
