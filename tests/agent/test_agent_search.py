"""Glob and Grep: patterns, filters, output modes, and never a file from outside the workspace."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from agent_helpers import Tools

from cuda_agent.agent.tools import ERROR, OK, REFUSED
from cuda_agent.agent.tools.search import glob_to_regex


def put(tools: Tools, rel: str, text: str = "x\n", age: float = 0.0) -> Path:
    path = tools.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("*.cu", ["a.cu"], ["k/a.cu", "a.cuh"]),
        ("**/*.cu", ["a.cu", "k/a.cu", "k/l/m.cu"], ["a.cpp"]),
        ("k/**", ["k/a", "k/l/m"], ["a"]),
        ("*.{cu,cuh}", ["a.cu", "b.cuh"], ["c.cpp"]),
        ("?.py", ["a.py"], ["ab.py"]),
        ("[ab].py", ["a.py", "b.py"], ["c.py"]),
        ("[!ab].py", ["c.py"], ["a.py"]),
    ],
)
def test_glob_translation(pattern: str, yes: list[str], no: list[str]) -> None:
    regex = glob_to_regex(pattern)
    assert all(regex.match(p) for p in yes), pattern
    assert not any(regex.match(p) for p in no), pattern


def test_glob_lists_newest_first_and_skips_generated_folders(tools: Tools) -> None:
    put(tools, "kernels/old.cu", age=100)
    put(tools, "kernels/new.cu", age=1)
    put(tools, "kernels/__pycache__/x.cu")
    put(tools, ".cache/cuda-agent/y.cu")
    result = tools.call("Glob", pattern="**/*.cu")
    shown = tools.ws.display_root
    assert result.status == OK
    assert result.content.splitlines() == [f"{shown}/kernels/new.cu", f"{shown}/kernels/old.cu"]


def test_glob_within_a_folder_and_no_matches(tools: Tools) -> None:
    put(tools, "kernels/a_binding.cpp")
    put(tools, "a_binding.cpp")
    result = tools.call("Glob", pattern="*_binding.cpp", path="kernels")
    assert result.content == f"{tools.ws.display_root}/kernels/a_binding.cpp"
    none = tools.call("Glob", pattern="*.xyz")
    assert none.status == OK and none.content.startswith("No files match") and none.meta == {"matches": 0}


def test_glob_errors_and_refusals(tools: Tools) -> None:
    assert tools.call("Glob", pattern="*", path="/etc").status == REFUSED
    assert tools.call("Glob", pattern="/etc/*").status == ERROR
    assert tools.call("Glob", pattern="*", path="nope").status == ERROR
    assert tools.call("Glob", pattern="*.{cu").status == ERROR
    assert tools.call("Glob", pattern="*", path="model.py").status == ERROR


def test_glob_and_grep_do_not_follow_links_out_of_the_workspace(tools: Tools, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.cu").write_text("TOKEN\n")
    os.symlink(outside, tools.root / "linked_dir")
    os.symlink(outside / "secret.cu", tools.root / "linked.cu")
    assert "secret" not in tools.call("Glob", pattern="**/*").content
    assert "linked" not in tools.call("Glob", pattern="**/*").content
    assert tools.call("Grep", pattern="TOKEN").content == "No matches found."


def test_grep_output_modes(tools: Tools) -> None:
    put(tools, "kernels/a.cu", "__global__ void a() {}\nint x;\n__global__ void b() {}\n")
    put(tools, "kernels/b.cu", "int y;\n")
    files = tools.call("Grep", pattern="__global__")
    assert files.content == f"{tools.ws.display_root}/kernels/a.cu" and files.meta == {"files": 1}
    count = tools.call("Grep", pattern=r"int \w;", output_mode="count")
    assert sorted(count.content.splitlines()) == [
        f"{tools.ws.display_root}/kernels/a.cu:1", f"{tools.ws.display_root}/kernels/b.cu:1"]  # fmt: skip
    content = tools.call("Grep", pattern="void b", output_mode="content")
    assert content.content == f"{tools.ws.display_root}/kernels/a.cu:3:__global__ void b() {{}}"
    bare = tools.call("Grep", pattern="void b", output_mode="content", **{"-n": False})
    assert bare.content == f"{tools.ws.display_root}/kernels/a.cu:__global__ void b() {{}}"


def test_grep_context_lines_case_and_multiline(tools: Tools) -> None:
    put(tools, "f.txt", "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\nEight\n")
    around = tools.call("Grep", pattern="three", output_mode="content", **{"-i": True, "-C": 1})
    p = f"{tools.ws.display_root}/f.txt"
    assert around.content.splitlines() == [f"{p}-2-two", f"{p}:3:THREE", f"{p}-4-four"]
    two = tools.call("Grep", pattern="three|eight", output_mode="content", **{"-i": True, "-A": 1})
    assert two.content.splitlines() == [f"{p}:3:THREE", f"{p}-4-four", "--", f"{p}:8:Eight"]
    span = tools.call("Grep", pattern="four.five", output_mode="content", multiline=True)
    assert span.content.splitlines() == [f"{p}:4:four", f"{p}:5:five"]
    assert tools.call("Grep", pattern="four.five").content == "No matches found."


def test_grep_filters_by_glob_type_and_path(tools: Tools) -> None:
    put(tools, "kernels/a.cu", "needle\n")
    put(tools, "kernels/a_binding.cpp", "needle\n")
    put(tools, "notes.md", "needle\n")
    shown = tools.ws.display_root
    assert tools.call("Grep", pattern="needle", glob="*.cu").content == f"{shown}/kernels/a.cu"
    assert tools.call("Grep", pattern="needle", type="cpp").content == f"{shown}/kernels/a_binding.cpp"
    assert tools.call("Grep", pattern="needle", path="notes.md").content == f"{shown}/notes.md"
    assert tools.call("Grep", pattern="needle", glob="kernels/*.cu").content == f"{shown}/kernels/a.cu"
    unknown = tools.call("Grep", pattern="needle", type="cobol")
    assert unknown.status == ERROR and "known types" in unknown.content


def test_grep_head_limit_binary_and_bad_regex(tools: Tools) -> None:
    put(tools, "many.txt", "".join(f"hit {i}\n" for i in range(50)))
    (tools.root / "blob.bin").write_bytes(b"hit\x00hit")
    limited = tools.call("Grep", pattern="hit", output_mode="content", head_limit=3)
    lines = limited.content.splitlines()
    assert len(lines) == 4 and lines[-1] == "[showing the first 3 of 50 results]"
    assert "blob.bin" not in tools.call("Grep", pattern="hit").content
    bad = tools.call("Grep", pattern="(unclosed")
    assert bad.status == ERROR and "Invalid regular expression" in bad.content
    assert tools.call("Grep", pattern="x", path="../").status == REFUSED


def test_grep_truncates_huge_output_with_a_note(make_tools) -> None:
    tools = make_tools(max_output_chars=2000)
    put(tools, "many.txt", "".join(f"hit {i}\n" for i in range(2000)))
    result = tools.call("Grep", pattern="hit", output_mode="content")
    assert "output truncated" in result.content and result.meta["truncated_chars"] > 0
    assert len(result.content) < 2500
