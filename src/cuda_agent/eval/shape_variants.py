"""Held-out shapes: a task's inputs at sizes its kernel was not written for (issue 29, item 8).

Agents' kernels often hard-code the task's sizes (a grid for exactly 16 x 4096, a row length that is a
multiple of 256, a tile that divides N). A KernelBench task states its sizes as module-level integer
constants that `get_inputs()` reads (`batch_size = 16`, `dim = 16384`); some of them also build the
model (`get_init_inputs()` returns `in_features`): those are fixed, since a different weight shape is a
different task and the candidate loads the reference's state. The rest can vary: a variant rewrites
those constants and nothing else, so the reference and the candidate's `model_new.py` (which may import
them from `model.py`) see the same new sizes.

Which constants vary: integer literals >= `MIN_SIZE` assigned at module level, reached from
`get_inputs()` (directly or through other module-level names), and reached from nothing else: not from
`get_init_inputs()`, the model's classes or any other function (what the model's construction or
forward reads is part of the task's definition). Sizes only shrink (current KernelBench sizes already
fill a large part of an H200's memory), to sizes a kernel written for the original would get wrong if
it assumed them: half (a different grid) and an odd size near three quarters (no power-of-two
divisibility, a ragged last tile).

Variants are a metric of their own, judged for correctness only (no timing); they never change a reward.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from cuda_agent.task import Task

MIN_SIZE = 8  # smaller integers are more often flags, axes or counts than sizes

# (name, new size from the old one, why this size)
VARIANTS: tuple[tuple[str, Callable[[int], int], str], ...] = (
    ("half", lambda v: max(1, (v + 1) // 2), "half of every varied size: another grid, the same divisibility"),
    ("ragged", lambda v: max(1, (3 * v) // 4 | 1), "an odd size near 3/4: no power-of-two divisibility, a ragged last tile"),
)  # fmt: skip


@dataclass(frozen=True)
class ShapeVariant:
    """One held-out variant of a task: its name, each varied constant's (old, new) size, the new task."""

    name: str
    sizes: dict[str, tuple[int, int]]
    task: Task


def varied_constants(source: str) -> tuple[dict[str, ast.Constant], str | None]:
    """The module-level integer constants a variant may change (name -> its literal node), or none and
    the reason."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return {}, f"the task does not parse ({exc.msg}, line {exc.lineno})"
    literals: dict[str, ast.Constant] = {}
    depends: dict[str, set[str]] = {}  # module-level name -> module-level names its value reads
    readers: dict[str, set[str]] = {}  # function or class name -> names it reads
    assigned_twice: set[str] = set()
    for node in tree.body:
        target, value = _single_assignment(node)
        if target is not None and value is not None:
            if target in depends:
                assigned_twice.add(target)
            depends[target] = _names(value)
            if isinstance(value, ast.Constant) and type(value.value) is int and value.value >= MIN_SIZE:
                literals[target] = value
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            readers[node.name] = _names(node)
        else:  # any other statement (an import, a loop, a call) counts as reading what it names
            readers.setdefault("<module>", set()).update(_names(node))
    if "get_inputs" not in readers:
        return {}, "the task has no get_inputs() function"

    def closure(names: set[str]) -> set[str]:
        seen, todo = set(), list(names)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo.extend(depends.get(name, ()))
            todo.extend(readers.get(name, ()))  # a helper function called by name
        return seen

    from_inputs = closure(readers["get_inputs"])
    # What everything else reads is fixed: the classes, get_init_inputs, module-level statements and every
    # function get_inputs does not call (a helper it calls is read through it, and is fixed too where
    # anything else calls it, through the closure).
    roots = [r for r in readers if r != "get_inputs" and r not in from_inputs]
    fixed = closure({n for r in roots for n in readers[r]})
    chosen = {name: node for name, node in literals.items()
              if name in from_inputs and name not in fixed and name not in assigned_twice}  # fmt: skip
    if not chosen:
        return {}, ("every size get_inputs() uses also builds the model or is read by its code"
                    if from_inputs & set(literals) else "get_inputs() reads no module-level integer size")  # fmt: skip
    return chosen, None


def shape_variants(task: Task) -> tuple[list[ShapeVariant], str | None]:
    """The task's held-out variants (those that change at least one size), or none and the reason."""
    chosen, reason = varied_constants(task.source)
    if reason is not None:
        return [], reason
    lines = task.source.splitlines(keepends=True)
    variants = []
    for name, size, _why in VARIANTS:
        sizes = {k: (int(node.value), size(int(node.value))) for k, node in chosen.items()}
        if all(old == new for old, new in sizes.values()):
            continue
        source = _rewrite(lines, {chosen[k]: new for k, (_, new) in sizes.items()})
        variants.append(ShapeVariant(name, sizes, Task(name=f"{task.name}-{name}", source=source)))
    return variants, None if variants else "no varied size changes (all at their minimum)"


def _single_assignment(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return node.target.id, node.value
    return None, None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _rewrite(lines: list[str], new_values: dict[ast.Constant, int]) -> str:
    """The source with each literal replaced in place (its line and columns), everything else as it was."""
    out = list(lines)
    # right to left within a line, so earlier columns stay valid
    for node, value in sorted(
        new_values.items(), key=lambda kv: (kv[0].lineno, kv[0].col_offset), reverse=True
    ):
        assert node.end_lineno == node.lineno and node.end_col_offset is not None
        line = out[node.lineno - 1]
        # col offsets count UTF-8 bytes
        raw = line.encode()
        out[node.lineno - 1] = (
            raw[: node.col_offset] + str(value).encode() + raw[node.end_col_offset :]
        ).decode()
    return "".join(out)
