"""Whether `model_new.py` is Python at all: a file the interpreter cannot compile is a compile error.

A syntax error in `model_new.py` is the same kind of mistake as a `.cu` file nvcc refuses: the submission
does not build, and the person or agent fixing it needs the file, the line and the caret. It used to reach
the static checks and come back as `rejected` ("static checks failed: ... syntax error"), a status that
means "the judge refuses what this code does", which sent readers looking for a forbidden construct.

Trust boundary: runs in the parent on source text; `compile()` parses and compiles, it never runs the code.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass


@dataclass(frozen=True)
class SyntaxProblem:
    line: int
    reason: str  # one line: file, line and Python's message
    log: str  # what Python prints for it (the line and a caret), for the verdict's compile_log


def syntax_problem(source: str, path: str = "model_new.py") -> SyntaxProblem | None:
    """The first syntax error Python finds in `source` (named as `path`), or None when it compiles.

    `compile()` rather than `ast.parse`: some errors (`return` outside a function, `nonlocal` at module
    level, `await` outside async) are raised only when the syntax tree is compiled."""
    try:
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = exc.lineno or 0
        log = "".join(traceback.format_exception_only(type(exc), exc)).rstrip()
        return SyntaxProblem(line, f"{path} line {line}: {type(exc).__name__}: {exc.msg}", log)
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes; nesting too deep to compile
        return SyntaxProblem(0, f"{path}: Python cannot compile it: {type(exc).__name__}: {exc}", str(exc))
    return None
