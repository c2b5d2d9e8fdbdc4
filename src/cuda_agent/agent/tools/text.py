"""Keeping tool output inside the model's context: long text is cut in the middle, with a note.

The head of a compiler log says what was built and the tail says how it ended, so both are kept; the
note says exactly how much was cut so the model knows to narrow its command (grep, head, tail) rather
than assume it saw everything.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_MAX_OUTPUT_CHARS = 30_000


def truncate_middle(text: str, limit: int = DEFAULT_MAX_OUTPUT_CHARS) -> tuple[str, int]:
    """Return (`text` cut to about `limit` characters, number of characters cut)."""
    if limit <= 0 or len(text) <= limit:
        return text, 0
    head = text[: limit // 2]
    tail = text[len(text) - (limit - len(head)):]
    cut = len(text) - len(head) - len(tail)
    removed = text[len(head): len(text) - len(tail)]
    return f"{head}\n{cut_note(cut, removed.count(chr(10)))}\n{tail}", cut


def cut_note(chars: int, lines: int | None = None) -> str:
    where = f"{chars} characters" + (f" ({lines} lines)" if lines is not None else "")
    return (
        f"[... output truncated: {where} cut from the middle; narrow the command "
        "(grep, head, tail, redirect to a file) to see them ...]"
    )


def read_head_tail(path: Path, start: int, limit: int) -> tuple[str, int, int]:
    """Decode a log file from byte `start`, keeping its head and tail when it is long.

    Reads at most about `limit` characters' worth of bytes, however large the file grew (a runaway
    `yes` must not load gigabytes into memory). Returns (text, bytes cut, end offset).
    """
    size = os.path.getsize(path)
    length = max(0, size - start)
    with open(path, "rb") as f:
        if length <= limit * 2 or limit <= 0:
            f.seek(start)
            data = f.read(length)
            text, cut = truncate_middle(data.decode("utf-8", errors="replace"), limit)
            return text, cut, size
        f.seek(start)
        head = f.read(limit // 2)
        tail_start = size - (limit - limit // 2)
        f.seek(tail_start)
        tail = f.read(size - tail_start)  # not to EOF: a running command may have written more since
    cut_bytes = length - len(head) - len(tail)
    note = cut_note(cut_bytes).replace("characters", "bytes")
    text = f"{head.decode('utf-8', errors='replace')}\n{note}\n{tail.decode('utf-8', errors='replace')}"
    return text, cut_bytes, size
