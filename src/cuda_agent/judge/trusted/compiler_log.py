"""What of a compiler's output an agent reads: each error with the source lines printed under it, bounded
in lines and characters so that a template error of thousands of lines cannot fill the agent's context."""

from __future__ import annotations

import re

COMPILE_LOG_LINES = 60
COMPILE_LOG_CHARS = 8000

_ERROR_LINE = re.compile(r"(error|undefined reference|fatal|multiple definition|Error)", re.IGNORECASE)


def trim_compiler_output(text: str) -> list[str]:
    """Keep the lines an agent needs: each error with the source lines the compiler printed under it."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    keep: list[str] = []
    for i, line in enumerate(lines):
        if _ERROR_LINE.search(line) and "warning" not in line.lower().split("error")[0]:
            for context in lines[i : i + 3]:
                if context not in keep[-3:]:
                    keep.append(context)
    if not keep:
        keep = lines[-COMPILE_LOG_LINES:]
    if len(keep) > COMPILE_LOG_LINES:
        dropped = len(keep) - COMPILE_LOG_LINES
        keep = [*keep[:COMPILE_LOG_LINES], f"... {dropped} more lines of errors cut"]
    trimmed: list[str] = []
    size = 0
    for line in keep:
        size += len(line) + 1
        if size > COMPILE_LOG_CHARS:
            trimmed.append("... output cut")
            break
        trimmed.append(line)
    return trimmed
