"""The values of load_inline's arguments, read from a kernel file's syntax tree without running it.

Published kernels build their sources in many ways: literals, module constants, locals of the method that
calls load_inline, `+` and `+=` concatenations, f-strings, `.format`/`%` of templates, `textwrap.dedent`.
Everything here evaluates only expressions over constants, with the rules in `STR_METHODS` and
`ARITHMETIC`; a name bound to something else is a `Dynamic` whose expression the reason quotes, and the
importer then falls back to running the file with load_inline intercepted (eval/import_capture.py).

Scopes: a call at module level sees the module's constants bound before it; a call inside a function sees
all module constants (the module has run by then) and the function's own assignments before the call,
in order. An assignment inside a branch or loop that does not hold the call cannot be known statically:
its names become `Dynamic` ("assigned inside an if at line 12").
"""

from __future__ import annotations

import ast
import operator
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_STRING = 4 << 20  # no constant folds into more than the judge takes for a kernels/ file
MAX_NUMBER = 1 << 64  # sizes and counts; nothing a kernel file needs is larger

# str methods a template may be put through, with why each is safe to apply to constants: all return
# a new string from the receiver and constant arguments, and none runs code.
STR_METHODS: dict[str, str] = {
    "format": "templates filled with constants (`KERNEL.format(block=256)`); fields index constants only",
    "replace": "placeholder substitution (`SRC.replace('BLOCK', '256')`)",
    "strip": "trimming", "lstrip": "trimming", "rstrip": "trimming",
    "upper": "case of a name", "lower": "case of a name",
    "join": "lists of sources joined (`'\\n'.join([A, B])`)",
}  # fmt: skip
# Binary operators over numbers (sizes and block counts spelled as arithmetic); `+` also joins strings
# and lists, `%` also formats a string. No `**` and no `str * int`: either could build something huge.
ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Div: operator.truediv,
}  # fmt: skip
# Calls of plain functions over constants: what each gives.
FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "textwrap.dedent": textwrap.dedent, "dedent": textwrap.dedent, "str": str, "int": int,
}  # fmt: skip

# ...and over lists (tuples read as lists): `functions=list(NAMES)`, `sorted(NAMES)`.
SEQUENCE_FUNCTIONS: dict[str, Callable[[list[Any]], Any]] = {"list": list, "tuple": list, "sorted": sorted}


class Unresolved(Exception):
    """The expression is not constant; the message names the construct."""


@dataclass(frozen=True)
class Dynamic:
    """A name bound to something only running the file would compute (the expression, for the reason)."""

    expression: str
    where: str = ""


def value(node: ast.AST, env: dict[str, Any]) -> Any:
    """The value of a constant expression over `env`, else Unresolved naming what is not constant."""
    result = _value(node, env)
    if isinstance(result, str) and len(result) > MAX_STRING:
        raise Unresolved(f"a source longer than {MAX_STRING >> 20} MiB")
    return result


def _value(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float | bool | type(None)):
        return node.value
    if isinstance(node, ast.Name):
        return _name(node.id, env)
    if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
        return _binop(node, env)
    if isinstance(node, ast.JoinedStr):
        parts: list[str] = []
        for part in node.values:
            parts.append(_fstring_part(part, env))
            _bound(sum(map(len, parts)), "an f-string")
        return "".join(parts)
    if isinstance(node, ast.List | ast.Tuple):
        return [value(e, env) for e in node.elts]
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {value(k, env): value(v, env) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, ast.Call):
        return _call(node, env)
    raise Unresolved(f"`{ast.unparse(node)[:80]}` is computed at run time")


def _name(name: str, env: dict[str, Any]) -> Any:
    bound = env.get(name, Dynamic(""))
    if isinstance(bound, Dynamic):
        if bound.where:
            raise Unresolved(f"{name} is {bound.where}")
        if bound.expression:
            raise Unresolved(f"{name} is computed at run time (`{name} = {bound.expression[:70]}`)")
        raise Unresolved(f"{name} is not a constant of the module or of the calling function")
    return bound


def _binop(node: ast.BinOp, env: dict[str, Any]) -> Any:
    left, right = value(node.left, env), value(node.right, env)
    if isinstance(node.op, ast.Mod) and isinstance(left, str):  # printf-style formatting of a template
        args = tuple(right) if isinstance(right, list) else right
        _bound(len(left) + left.count("%") * max([len(str(a)) for a in (args if isinstance(args, tuple) else [args])]
                                                 + [1]), "`%` formatting")  # fmt: skip
        _no_wide_fields(re.findall(r"%[-#0 +]*(\d+|\*)", left))
        try:
            return left % args
        except (TypeError, ValueError, KeyError) as exc:
            raise Unresolved(f"`%` formatting fails: {exc}") from exc
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (left, right))
    joinable = isinstance(node.op, ast.Add) and (
        (isinstance(left, str) and isinstance(right, str)) or (isinstance(left, list) and isinstance(right, list)))  # fmt: skip
    if not (numbers or joinable):
        raise Unresolved(f"`{ast.unparse(node)[:60]}` mixes {type(left).__name__} and {type(right).__name__}")
    if joinable:
        _bound(len(left) + len(right), "a concatenation")
    try:
        result = ARITHMETIC[type(node.op)](left, right)
    except ArithmeticError as exc:
        raise Unresolved(f"`{ast.unparse(node)[:60]}`: {exc}") from exc
    if numbers and abs(result) > MAX_NUMBER:
        raise Unresolved(f"`{ast.unparse(node)[:60]}` is larger than 2**64")
    return result


def _bound(size: int, what: str) -> None:
    """Refuse to build a string beyond MAX_STRING before building it (a template can multiply its input)."""
    if size > MAX_STRING:
        raise Unresolved(f"{what} would make a source longer than {MAX_STRING >> 20} MiB")


def _no_wide_fields(widths: list[str]) -> None:
    """Field widths and precisions of a format (`{:>9999999999}`, `%9999999999d`) that would pad a value
    into a huge string; `*` takes its width from the arguments."""
    for width in widths:
        if width == "*" or int(width) > MAX_STRING:
            raise Unresolved("a format field wider than a source may be")


def _fstring_part(part: ast.AST, env: dict[str, Any]) -> str:
    if isinstance(part, ast.Constant):
        return str(part.value)
    if not isinstance(part, ast.FormattedValue):
        raise Unresolved("an f-string part that is not a value")
    inner = value(part.value, env)
    if not isinstance(inner, str | int | float):
        raise Unresolved("f-string over a non-constant")
    converted = {-1: inner, ord("s"): str(inner), ord("r"): repr(inner), ord("a"): ascii(inner)}[
        part.conversion
    ]
    spec = "" if part.format_spec is None else value(part.format_spec, env)
    _no_wide_fields(re.findall(r"\d+", str(spec)))
    try:
        return format(converted, spec)
    except (TypeError, ValueError) as exc:
        raise Unresolved(f"f-string format spec {spec!r}: {exc}") from exc


def _call(node: ast.Call, env: dict[str, Any]) -> Any:
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        raise Unresolved(f"`{ast.unparse(node)[:80]}` passes *args or **kwargs")
    args = [value(a, env) for a in node.args]
    kwargs = {k.arg: value(k.value, env) for k in node.keywords}
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in STR_METHODS:
        try:
            receiver = value(func.value, env)
        except Unresolved:
            if isinstance(func.value, ast.Name) and isinstance(env.get(func.value.id), Dynamic):
                raise  # `SRC.format(...)` with SRC computed at run time: name SRC
            receiver = None
        if isinstance(receiver, str):
            _bound_method(receiver, func.attr, args, kwargs)
            try:
                return getattr(receiver, func.attr)(*args, **kwargs)
            except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
                raise Unresolved(f"`{ast.unparse(node)[:60]}` fails: {type(exc).__name__}: {exc}") from exc
    dotted = ast.unparse(func)
    if dotted in SEQUENCE_FUNCTIONS and not kwargs and len(args) == 1 and isinstance(args[0], list):
        return SEQUENCE_FUNCTIONS[dotted](args[0])
    if dotted in FUNCTIONS and not kwargs and len(args) == 1 and isinstance(args[0], str | int | float):
        try:
            return FUNCTIONS[dotted](args[0])
        except (TypeError, ValueError) as exc:
            raise Unresolved(f"`{ast.unparse(node)[:60]}` fails: {exc}") from exc
    raise Unresolved(f"`{ast.unparse(node)[:80]}` is computed at run time")


def _bound_method(receiver: str, method: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """What a str method could produce, bounded before it runs."""
    texts = [str(a) for a in [*args, *kwargs.values()] if isinstance(a, str | int | float)]
    longest = max(map(len, texts), default=0)
    if method == "format":
        fields = re.findall(r"\{[^{}]*\}", receiver)
        _no_wide_fields(
            [w for f in fields for w in re.findall(r"\d+", f.split(":", 1)[1] if ":" in f else "")]
        )
        _bound(len(receiver) + len(fields) * longest, "`.format`")
    elif method == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        occurrences = len(receiver) + 1 if not args[0] else receiver.count(args[0])
        _bound(len(receiver) + occurrences * len(args[1]), "`.replace`")
    elif method == "join" and args and isinstance(args[0], list):
        items = [i for i in args[0] if isinstance(i, str)]
        _bound(sum(map(len, items)) + len(receiver) * len(args[0]), "`.join`")


# ---- scopes ------------------------------------------------------------------------------------------


def bind(env: dict[str, Any], statement: ast.stmt) -> None:
    """Apply one straight-line statement's assignments to `env` (a name bound to a non-constant becomes
    Dynamic; `x += y` extends a constant)."""
    if isinstance(statement, ast.Assign | ast.AnnAssign):
        source = statement.value
        if source is None:
            return
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            _bind_target(env, target, source)
    elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        name = statement.target.id
        combined = ast.BinOp(left=ast.Name(id=name, ctx=ast.Load()), op=statement.op, right=statement.value)
        try:
            env[name] = value(combined, env)
        except Unresolved:
            env[name] = Dynamic(ast.unparse(statement))
    else:
        for name in _assigned(statement):
            env[name] = Dynamic(ast.unparse(statement)[:70])


def _bind_target(env: dict[str, Any], target: ast.expr, source: ast.expr) -> None:
    if isinstance(target, ast.Name):
        try:
            env[target.id] = value(source, env)
        except Unresolved:
            env[target.id] = Dynamic(ast.unparse(source))
    elif isinstance(target, ast.Tuple | ast.List) and isinstance(source, ast.Tuple | ast.List) \
            and len(target.elts) == len(source.elts):  # fmt: skip
        for t, s in zip(target.elts, source.elts, strict=True):
            _bind_target(env, t, s)
    else:
        for name in _names_in(target):
            env[name] = Dynamic(ast.unparse(source))


def _names_in(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _assigned(statement: ast.stmt) -> list[str]:
    """Names a statement (with its nested blocks, not nested functions) may bind."""
    names: list[str] = []
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)  # its own body is its own scope
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return names


def module_constants(tree: ast.Module, before_line: int | None = None) -> dict[str, Any]:
    """Module-level names bound to constant values, in order (a later binding replaces an earlier)."""
    env: dict[str, Any] = {}
    for node in tree.body:
        if before_line is not None and node.lineno >= before_line:
            break
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            bind(env, node)
    return env


BLOCKS = {ast.If: "an if", ast.For: "a for loop", ast.While: "a while loop", ast.Try: "a try",
          ast.With: "a with block"}  # fmt: skip


def scope_of(tree: ast.Module, call: ast.Call) -> dict[str, Any]:
    """The names `call` can read as constants: see the module docstring."""
    path = _path_to(tree, call) or [tree]
    functions = [n for n in path if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not functions:  # at module level (perhaps inside an if/try/with): what was bound before it
        return _walk_block(tree.body, path, {}, call)
    env = module_constants(tree)  # a function runs after the module: all of its constants
    for function in functions:
        for arg in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]:
            env[arg.arg] = Dynamic("", f"a parameter of {function.name}()")
        env = _walk_block(function.body, path, env, call)
    return env


LOOPS = {ast.For: "a for loop", ast.AsyncFor: "a for loop", ast.While: "a while loop",
         ast.ListComp: "a comprehension", ast.SetComp: "a comprehension", ast.DictComp: "a comprehension",
         ast.GeneratorExp: "a comprehension"}  # fmt: skip


def loop_around(tree: ast.Module, call: ast.Call) -> str | None:
    """`inside a for loop at line 12` when the call runs repeatedly in its function (its arguments may
    differ from one iteration to the next, which one static reading cannot follow), else None."""
    path = _path_to(tree, call) or []
    for node in reversed(path):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return None
        if type(node) in LOOPS:
            return f"it is called inside {LOOPS[type(node)]} at line {node.lineno}"
    return None


def _walk_block(
    body: list[ast.stmt], path: list[ast.AST], env: dict[str, Any], call: ast.Call
) -> dict[str, Any]:
    """Bind the statements of `body` before the one on `path`, then descend into that one."""
    env = dict(env)
    on_path = {id(n) for n in path}
    for statement in body:
        if id(statement) in on_path:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                return env  # the caller walks into the function with its own scope
            for child_body in _bodies(statement):
                if any(id(s) in on_path for s in child_body):
                    return _walk_block(child_body, path, env, call)
            return env
        if isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
            bind(env, statement)
        elif isinstance(statement, tuple(BLOCKS)):
            kind = BLOCKS[type(statement)]
            for name in _assigned(statement):
                env[name] = Dynamic("", f"assigned inside {kind} at line {statement.lineno}")
        else:
            for name in _assigned(statement):
                env[name] = Dynamic(ast.unparse(statement)[:70])
    return env


def _bodies(statement: ast.stmt) -> list[list[ast.stmt]]:
    bodies = [getattr(statement, f) for f in ("body", "orelse", "finalbody") if getattr(statement, f, None)]
    bodies += [h.body for h in getattr(statement, "handlers", [])]
    return bodies


def _path_to(root: ast.AST, target: ast.AST) -> list[ast.AST] | None:
    """The nodes from `root` down to `target` (both included), or None."""
    if root is target:
        return [root]
    for child in ast.iter_child_nodes(root):
        found = _path_to(child, target)
        if found is not None:
            return [root, *found]
    return None
