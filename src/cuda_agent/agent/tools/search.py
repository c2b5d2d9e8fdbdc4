"""Glob and Grep: finding files and text in the workspace without leaving it.

Both walk the tree themselves (never following symlinked folders) instead of shelling out, so results
cannot include anything outside the workspace and do not depend on which search binaries are installed.
Folders that only hold generated files (.git, __pycache__) are skipped, and so are binary files.
Glob lists newest files first, as coding agents do, so the files just written come up first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cuda_agent.agent.tools.base import Tool, ToolError, ToolResult, obj
from cuda_agent.agent.tools.context import ToolContext
from cuda_agent.agent.tools.files import is_binary
from cuda_agent.agent.tools.paths import Workspace
from cuda_agent.agent.tools.text import truncate_middle

SKIP_DIRS = frozenset({".git", "__pycache__", ".cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints"})
MAX_GLOB_RESULTS = 100
MAX_GREP_FILE_BYTES = 5 << 20

FILE_TYPES: dict[str, tuple[str, ...]] = {
    "py": ("*.py", "*.pyi"),
    "python": ("*.py", "*.pyi"),
    "cuda": ("*.cu", "*.cuh"),
    "cu": ("*.cu", "*.cuh"),
    "cpp": ("*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h", "*.inl"),
    "c": ("*.c", "*.h"),
    "h": ("*.h", "*.hpp", "*.cuh"),
    "sh": ("*.sh", "*.bash"),
    "md": ("*.md", "*.markdown"),
    "json": ("*.json",),
    "ipynb": ("*.ipynb",),
    "toml": ("*.toml",),
    "yaml": ("*.yaml", "*.yml"),
    "txt": ("*.txt",),
    "cmake": ("*.cmake", "CMakeLists.txt"),
    "make": ("Makefile", "*.mk"),
}


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob with `**`, `*`, `?`, `[...]` and `{a,b}` into a regex over '/'-separated paths."""
    out: list[str] = []
    i, n, depth = 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                i += 2
                if i < n and pattern[i] == "/":
                    i += 1
                    out.append("(?:[^/]*/)*")  # zero or more whole folders
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1: i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1: end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise ToolError(f"Unbalanced braces in glob pattern {pattern!r}.")
    try:
        return re.compile("".join(out) + r"\Z")
    except re.error as e:
        raise ToolError(f"Invalid glob pattern {pattern!r}: {e}.") from e


def walk_files(base: Path, ws: Workspace) -> Iterator[Path]:
    """Regular files under `base` (sorted, deterministic), without following symlinked folders."""
    if base.is_file():
        yield base
        return
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_symlink():
                target = Path(os.path.realpath(path))
                if not target.is_file() or not str(target).startswith(str(ws.root) + os.sep):
                    continue  # a symlink out of the workspace is not part of it
            elif not path.is_file():
                continue
            yield path


def _search_base(args: dict[str, Any], ws: Workspace) -> Path:
    base = ws.resolve(args["path"]) if args.get("path") else ws.root
    if not base.exists():
        raise ToolError(f"Path does not exist: {ws.display(base)}.")
    return base


class Glob(Tool):
    name = "Glob"
    description = (
        "Find files of the workspace by name pattern, e.g. `**/*.cu`, `kernels/*_binding.cpp`, "
        "`*.{cu,cuh}`. `*` does not cross folders, `**/` matches any number of folders. Returns paths, "
        "most recently modified first."
    )
    parameters = obj(
        {
            "pattern": {"type": "string", "description": "The glob pattern, relative to `path`."},
            "path": {"type": "string", "description": "Folder to search in (default: the workspace)."},
        },
        ["pattern"],
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        base = _search_base(args, ws)
        pattern = args["pattern"].strip()
        if not pattern:
            raise ToolError("The pattern is empty; try **/* for every file.")
        if os.path.isabs(pattern):
            raise ToolError("The pattern must be relative; pass the folder to search in as `path`.")
        if base.is_file():
            raise ToolError(f"{ws.display(base)} is a file; `path` must be a folder.")
        regex = glob_to_regex(pattern)
        matches = []
        for path in walk_files(base, ws):
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            if regex.match(rel):
                matches.append((-path.lstat().st_mtime_ns, ws.display(path)))
        matches.sort()
        if not matches:
            return ToolResult(f"No files match {pattern} in {ws.display(base)}.", meta={"matches": 0})
        shown = [name for _, name in matches[:MAX_GLOB_RESULTS]]
        body = "\n".join(shown)
        if len(matches) > MAX_GLOB_RESULTS:
            body += f"\n[showing {MAX_GLOB_RESULTS} of {len(matches)} files; use a narrower pattern]"
        return ToolResult(body, meta={"matches": len(matches)})


class Grep(Tool):
    name = "Grep"
    description = (
        "Search file contents of the workspace with a regular expression (Python `re` syntax). Filter "
        "files with `glob` (e.g. `*.cu`) or `type` (py, cuda, cpp, c, h, sh, md, json, ...). output_mode: "
        "`files_with_matches` (default, file paths), `content` (matching lines, with `-n` line numbers, "
        "`-A`/`-B`/`-C` context lines) or `count` (matches per file). `-i` ignores case; `multiline` lets "
        "patterns span lines (`.` matches newlines). `head_limit` keeps the first N lines/entries."
    )
    parameters = obj(
        {
            "pattern": {"type": "string", "description": "The regular expression to search for."},
            "path": {"type": "string", "description": "File or folder to search (default: the workspace)."},
            "glob": {"type": "string", "description": "Only files matching this glob, e.g. *.cu or **/*.py."},
            "type": {"type": "string", "description": "Only files of this type, e.g. py, cuda, cpp."},
            "output_mode": {
                "type": "string",
                "enum": ["content", "files_with_matches", "count"],
                "description": "What to return (default files_with_matches).",
            },
            "-i": {"type": "boolean", "description": "Case-insensitive search."},
            "-n": {"type": "boolean", "description": "Show line numbers in content mode (default true)."},
            "-A": {"type": "integer", "minimum": 0, "description": "Lines of context after each match."},
            "-B": {"type": "integer", "minimum": 0, "description": "Lines of context before each match."},
            "-C": {"type": "integer", "minimum": 0, "description": "Lines of context before and after."},
            "multiline": {"type": "boolean", "description": "Let the pattern span lines."},
            "head_limit": {"type": "integer", "minimum": 1, "description": "Keep only the first N results."},
        },
        ["pattern"],
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        flags = re.MULTILINE | (re.IGNORECASE if args.get("-i") else 0)
        if args.get("multiline"):
            flags |= re.DOTALL
        try:
            regex = re.compile(args["pattern"], flags)
        except re.error as e:
            raise ToolError(f"Invalid regular expression {args['pattern']!r}: {e}.") from e
        base = _search_base(args, ws)
        keep = self._file_filter(args)
        mode = args.get("output_mode", "files_with_matches")
        results: list[str] = []
        files_matched = 0
        for path in walk_files(base, ws):
            rel = os.path.relpath(path, base if base.is_dir() else base.parent).replace(os.sep, "/")
            if not keep(rel) or path.stat().st_size > MAX_GREP_FILE_BYTES or is_binary(path):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            spans = [(m.start(), m.end()) for m in regex.finditer(text)]
            if not spans:
                continue
            files_matched += 1
            shown = ws.display(path)
            if mode == "files_with_matches":
                results.append(shown)
            elif mode == "count":
                results.append(f"{shown}:{len(spans)}")
            else:
                results.extend(self._content_lines(shown, text, spans, args))
        if not results:
            return ToolResult("No matches found.", meta={"files": 0})
        total = len(results)
        limit = args.get("head_limit")
        if limit is not None and total > limit:
            results = results[:limit]
        body, cut = truncate_middle("\n".join(results), ctx.max_output_chars)
        if limit is not None and total > limit:
            body += f"\n[showing the first {limit} of {total} results]"
        meta: dict[str, Any] = {"files": files_matched}
        if cut:
            meta["truncated_chars"] = cut
        return ToolResult(body, meta=meta)

    @staticmethod
    def _file_filter(args: dict[str, Any]):
        patterns: list[re.Pattern[str]] = []
        by_name = True
        if args.get("glob"):
            by_name = "/" not in args["glob"]
            patterns.append(glob_to_regex(args["glob"]))
        types: list[re.Pattern[str]] = []
        if args.get("type"):
            kind = args["type"].lower().lstrip(".")
            if kind not in FILE_TYPES:
                raise ToolError(f"Unknown file type {args['type']!r}; known types: {', '.join(sorted(FILE_TYPES))}.")
            types = [glob_to_regex(p) for p in FILE_TYPES[kind]]

        def keep(rel: str) -> bool:
            name = rel.rsplit("/", 1)[-1]
            if patterns and not patterns[0].match(name if by_name else rel):
                return False
            return not types or any(t.match(name) for t in types)

        return keep

    @staticmethod
    def _content_lines(shown: str, text: str, spans: list[tuple[int, int]], args: dict[str, Any]) -> list[str]:
        lines = text.split("\n")
        if len(lines) > 1 and lines[-1] == "":
            lines.pop()  # the end of the last line, not a line of its own
        context = args.get("-C", 0)
        before = args.get("-B", context)
        after = args.get("-A", context)
        show_numbers = args.get("-n", True)
        hit: set[int] = set()
        for start, end in spans:
            first = text.count("\n", 0, start)
            last = text.count("\n", 0, max(start, end - 1)) if end > start else first
            hit.update(range(first, min(last, len(lines) - 1) + 1))
        wanted: set[int] = set()
        for index in hit:
            wanted.update(range(max(0, index - before), min(len(lines), index + after + 1)))
        out: list[str] = []
        previous = None
        for index in sorted(wanted):
            if previous is not None and index != previous + 1 and (before or after):
                out.append("--")
            sep = ":" if index in hit else "-"
            number = f"{index + 1}{sep}" if show_numbers else ""
            out.append(f"{shown}{sep}{number}{lines[index].rstrip(chr(13))}")
            previous = index
        return out
