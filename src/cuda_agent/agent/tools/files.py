"""Read, Write, Edit and MultiEdit: the file tools, with the semantics coding agents use.

Read shows `cat -n` style numbered lines so the model can quote exact text back into Edit. Edit only
replaces text that occurs exactly once (unless `replace_all`), because a replacement at a place the
model did not look at is the classic silent failure of string editing. MultiEdit applies all of its
edits or none. Every path goes through `Workspace.resolve`, which refuses anything outside the workspace
and writes to protected infrastructure.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cuda_agent.agent.tools.base import Tool, ToolError, ToolResult, obj
from cuda_agent.agent.tools.context import ToolContext
from cuda_agent.agent.tools.paths import Workspace

DEFAULT_READ_LINES = 2000
MAX_LINE_CHARS = 2000
_BINARY_SNIFF_BYTES = 8192
_SNIPPET_CONTEXT = 4


def is_binary(path: Path) -> bool:
    with open(path, "rb") as f:
        return b"\x00" in f.read(_BINARY_SNIFF_BYTES)


def read_text(path: Path, shown: str, ws: Workspace) -> str:
    """The text of an existing, non-binary file, or a ToolError saying why it cannot be read."""
    if not path.exists():
        raise ToolError(_missing_message(path, shown, ws))
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file; list it with Glob or Bash (ls).")
    if is_binary(path):
        raise ToolError(
            f"{shown} is a binary file ({path.stat().st_size} bytes); these tools only handle text. "
            "Inspect it with Bash (e.g. `file`, `nm -D`, `xxd | head`)."
        )
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        return f.read()


def write_text(path: Path, content: str, shown: str) -> None:
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; pass a file path.")
    if any(parent.exists() and not parent.is_dir() for parent in path.parents):
        raise ToolError(f"Cannot create {shown}: a parent of it is a file, not a directory.")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(content)
    except OSError as e:
        raise ToolError(f"Cannot write {shown}: {e.strerror or e}.") from e


def _missing_message(path: Path, shown: str, ws: Workspace) -> str:
    message = f"File does not exist: {shown}."
    similar = _similar_files(path.name, ws)
    if similar:
        message += " Files with the same name: " + ", ".join(similar) + "."
    return message + " The workspace is the current directory of Bash; Glob lists its files."


def _similar_files(name: str, ws: Workspace, limit: int = 3) -> list[str]:
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(ws.root):
        dirnames[:] = sorted(d for d in dirnames if d not in (".git", "__pycache__"))
        if name in filenames:
            found.append(ws.display(Path(dirpath) / name))
            if len(found) >= limit:
                break
    return found


def numbered(lines: list[str], first: int) -> str:
    """`cat -n` layout: right-aligned line number, a tab, the line."""
    return "\n".join(f"{first + i:>6}\t{line}" for i, line in enumerate(lines))


def _notebook_as_text(text: str) -> str | None:
    try:
        notebook = json.loads(text)
        cells = notebook["cells"]
    except (ValueError, KeyError, TypeError):
        return None
    out = []
    for index, cell in enumerate(cells):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        cell_id = cell.get("id", f"cell-{index}")
        out.append(f'<cell id="{cell_id}" index={index} type="{cell.get("cell_type", "code")}">')
        out.extend(source.split("\n"))
        out.append("</cell>")
    return "\n".join(out) + "\n"


class Read(Tool):
    name = "Read"
    description = (
        "Read a text file of the workspace. Returns lines numbered like `cat -n` (number, tab, line); the "
        "numbers are not part of the file. By default up to 2000 lines from the start; for long files pass "
        "`offset` (the 1-based line to start at) and `limit` (how many lines). Lines longer than 2000 "
        "characters are cut. Notebooks (.ipynb) are shown cell by cell with their ids."
    )
    parameters = obj(
        {
            "file_path": {"type": "string", "description": "Path of the file (relative to the workspace or absolute)."},
            "offset": {"type": "integer", "description": "1-based line number to start reading at.", "minimum": 0},
            "limit": {"type": "integer", "description": "Number of lines to read.", "minimum": 1},
        },
        ["file_path"],
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        path = ws.resolve(args["file_path"])
        shown = ws.display(path)
        text = read_text(path, shown, ws)
        if path.suffix == ".ipynb":
            text = _notebook_as_text(text) or text
        if text == "":
            return ToolResult(f"{shown} exists but is empty (0 lines).", meta={"lines": 0})
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        total = len(lines)
        first = max(1, args.get("offset") or 1)
        if first > total:
            raise ToolError(f"offset {first} is past the end of {shown}, which has {total} line(s).")
        count = args.get("limit") or DEFAULT_READ_LINES
        window = lines[first - 1: first - 1 + count]
        shown_lines: list[str] = []
        size = 0
        for line in window:
            line = line.rstrip("\r")
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + f" [... line cut: {len(line) - MAX_LINE_CHARS} more characters]"
            size += len(line) + 8
            if shown_lines and size > ctx.max_output_chars:
                break
            shown_lines.append(line)
        last = first + len(shown_lines) - 1
        body = numbered(shown_lines, first)
        if last < total:
            body += f"\n[showing lines {first}-{last} of {total}; pass offset={last + 1} to read on]"
        return ToolResult(body, meta={"lines": total, "first": first, "last": last})


class Write(Tool):
    name = "Write"
    description = (
        "Write a file of the workspace, creating it (and its folders) or replacing its whole content. "
        "Prefer Edit for changing part of an existing file. Protected infrastructure (model.py, utils/, "
        "binding.cpp, binding_registry.h) cannot be written."
    )
    parameters = obj(
        {
            "file_path": {"type": "string", "description": "Path of the file (relative to the workspace or absolute)."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        ["file_path", "content"],
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        path = ws.resolve(args["file_path"], write=True)
        shown = ws.display(path)
        existed = path.exists()
        content = args["content"]
        write_text(path, content, shown)
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        verb = "Overwrote" if existed else "Created"
        return ToolResult(f"{verb} {shown} ({lines} lines).", meta={"lines": lines, "created": not existed})


def apply_edit(content: str | None, old: str, new: str, replace_all: bool, shown: str) -> tuple[str, int]:
    """Apply one exact string replacement to `content` (None: the file does not exist yet)."""
    if old == new:
        raise ToolError("old_string and new_string are identical; there is nothing to change.")
    if content is None:
        if old == "":
            return new, 1
        raise ToolError(f"File does not exist: {shown}. To create it, use Write (or Edit with an empty old_string).")
    if old == "":
        if content == "":
            return new, 1
        raise ToolError(
            f"old_string is empty but {shown} is not; include the text next to the insertion point in "
            "old_string, or use Write to replace the whole file."
        )
    count = content.count(old)
    if count == 0:
        raise ToolError(f"old_string was not found in {shown}. {_near_miss(content, old)}")
    if count > 1 and not replace_all:
        lines = _occurrence_lines(content, old)
        where = ", ".join(str(n) for n in lines[:10]) + (" ..." if len(lines) > 10 else "")
        raise ToolError(
            f"old_string occurs {count} times in {shown} (at lines {where}); include more surrounding text "
            "to make it unique, or set replace_all to true to replace every occurrence."
        )
    return content.replace(old, new) if replace_all else content.replace(old, new, 1), count if replace_all else 1


def _occurrence_lines(content: str, old: str) -> list[int]:
    lines, start = [], 0
    while (index := content.find(old, start)) != -1:
        lines.append(content.count("\n", 0, index) + 1)
        start = index + max(1, len(old))
    return lines


def _near_miss(content: str, old: str) -> str:
    advice = "It must match the file exactly, including whitespace and indentation; Read the file to check."
    first = next((line.strip() for line in old.split("\n") if line.strip()), "")
    if not first:
        return advice
    for number, line in enumerate(content.split("\n"), start=1):
        if first in line.strip():
            return f"{advice} Its first non-blank line resembles line {number}: {line.strip()[:120]!r}."
    return advice


def _snippet(content: str, new: str) -> str:
    """Numbered lines around the first place `new` now occupies, so the model sees the result."""
    index = content.find(new) if new else 0
    if index < 0:
        return ""
    lines = content.split("\n")
    start_line = content.count("\n", 0, index)
    end_line = start_line + new.count("\n")
    lo = max(0, start_line - _SNIPPET_CONTEXT)
    hi = min(len(lines), end_line + _SNIPPET_CONTEXT + 1)
    if hi - lo > 40:
        hi = lo + 40
    return numbered(lines[lo:hi], lo + 1)


class Edit(Tool):
    name = "Edit"
    description = (
        "Replace text in a file of the workspace: `old_string` must occur exactly once in the file (copy "
        "it from Read output, without the line-number prefix, with exact whitespace) unless `replace_all` "
        "is true. An empty old_string creates a new file. Protected infrastructure cannot be edited."
    )
    parameters = obj(
        {
            "file_path": {"type": "string", "description": "Path of the file (relative to the workspace or absolute)."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The replacement text (must differ from old_string)."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."},
        },
        ["file_path", "old_string", "new_string"],
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        path = ws.resolve(args["file_path"], write=True)
        shown = ws.display(path)
        content = read_text(path, shown, ws) if path.exists() else None
        updated, count = apply_edit(
            content, args["old_string"], args["new_string"], bool(args.get("replace_all")), shown
        )
        write_text(path, updated, shown)
        verb = "Created" if content is None else "Edited"
        plural = "occurrence" if count == 1 else "occurrences"
        message = f"{verb} {shown}: replaced {count} {plural}."
        snippet = _snippet(updated, args["new_string"])
        if snippet:
            message += f" The result around the change:\n{snippet}"
        return ToolResult(message, meta={"replacements": count})


class MultiEdit(Tool):
    name = "MultiEdit"
    description = (
        "Make several Edit-style replacements in one file, in order, atomically: each edit applies to the "
        "result of the previous ones, and if any edit fails none is applied. Same rules as Edit for each "
        "edit (unique old_string unless replace_all; an empty old_string in the first edit creates a new file)."
    )
    parameters = obj(
        {
            "file_path": {"type": "string", "description": "Path of the file (relative to the workspace or absolute)."},
            "edits": {
                "type": "array",
                "minItems": 1,
                "description": "The edits, applied in order.",
                "items": obj(
                    {
                        "old_string": {"type": "string", "description": "The exact text to replace."},
                        "new_string": {"type": "string", "description": "The replacement text."},
                        "replace_all": {"type": "boolean", "description": "Replace every occurrence."},
                    },
                    ["old_string", "new_string"],
                ),
            },
        },
        ["file_path", "edits"],
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        path = ws.resolve(args["file_path"], write=True)
        shown = ws.display(path)
        original = read_text(path, shown, ws) if path.exists() else None
        content = original
        edits = args["edits"]
        total = 0
        for number, edit in enumerate(edits, start=1):
            try:
                content, count = apply_edit(
                    content, edit["old_string"], edit["new_string"], bool(edit.get("replace_all")), shown
                )
            except ToolError as e:
                raise ToolError(
                    f"Edit {number} of {len(edits)} failed: {e} No edits were applied; {shown} is unchanged."
                ) from e
            total += count
        assert content is not None
        write_text(path, content, shown)
        verb = "Created" if original is None else "Edited"
        return ToolResult(
            f"{verb} {shown}: applied {len(edits)} edit(s), {total} replacement(s).",
            meta={"edits": len(edits), "replacements": total},
        )
