"""Normalised ASTs and operator sequences: the shared vocabulary of de-duplication and decontamination.

Two tasks that differ only in variable names, attribute names, docstrings or size constants are the same
task for training purposes. `normalise` rewrites a task's AST so that exactly those differences vanish:
user-chosen identifiers become v0, v1, ... in order of first use (library names such as `torch`, `nn`,
`F` and attribute names of library calls stay), every literal becomes a placeholder, docstrings go. The
digest of the result identifies near-duplicates; its shingles measure similarity. `op_sequence` reads the
ops a `forward` applies, in order, naming `nn.Conv2d`, `F.conv2d` and `torch.conv2d` alike.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import re
from collections.abc import Sequence

_KEEP_NAMES = {"torch", "nn", "F", "math", "transformers", "self", "super", *dir(builtins)}
_BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.MatMult: "matmul",
    ast.Pow: "pow",
    ast.FloorDiv: "floor_divide",
    ast.Mod: "remainder",
}
# Calls that only move data around or read metadata: not operators for the purpose of comparing tasks.
_NOT_OPS = {
    "super",
    "size",
    "dim",
    "shape",
    "contiguous",
    "to",
    "float",
    "cuda",
    "cpu",
    "len",
    "range",
    "isinstance",
}


class _Normaliser(ast.NodeTransformer):
    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.attrs: dict[str, str] = {}
        self.count = 0

    def _name(self, name: str) -> str:
        if name in _KEEP_NAMES:
            return name
        if name not in self.names:
            self.names[name] = f"v{self.count}"
            self.count += 1
        return self.names[name]

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(id=self._name(node.id), ctx=node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.copy_location(ast.arg(arg=self._name(node.arg)), node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        if node.name not in ("forward", "__init__", "get_inputs", "get_init_inputs"):
            node.name = self._name(node.name)
        node.decorator_list = []
        node.returns = None
        _strip_docstring(node)
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        _strip_docstring(node)
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            if node.attr not in self.attrs:
                self.attrs[node.attr] = f"a{len(self.attrs)}"
            node.attr = self.attrs[node.attr]
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.copy_location(ast.Constant(value="C"), node)

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        if node.value is None:
            return None
        return ast.copy_location(
            ast.Assign(targets=[self.visit(node.target)], value=self.visit(node.value)), node
        )


def _strip_docstring(node: ast.FunctionDef | ast.ClassDef | ast.Module) -> None:
    body = node.body
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        node.body = body[1:] or [ast.Pass()]


def normalise(source: str) -> ast.Module:
    """The task's AST with names, literals, docstrings and module-level size constants made uniform.

    Module-level assignments of literals (`batch_size = 128`, `kernel_size = (3, 3)`) are kept but their
    names and values normalise away, and imports are dropped, so a reshaped copy (different sizes) or a
    renamed copy normalises to the same tree as the original.
    """
    tree = ast.parse(source)
    _strip_docstring(tree)
    imported = {
        (a.asname or a.name).split(".")[0]
        for n in tree.body
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    tree.body = [n for n in tree.body if not isinstance(n, ast.Import | ast.ImportFrom)]
    normaliser = _Normaliser()
    normaliser.names.update({name: name for name in imported})  # library names (LlamaMLP) are semantics
    tree = normaliser.visit(tree)
    ast.fix_missing_locations(tree)
    return tree


def normalised_dump(source: str) -> str:
    return ast.dump(normalise(source), annotate_fields=False)


def ast_digest(source: str) -> str:
    """Identity of a task up to renaming and resizing: equal digests mean near-duplicates."""
    return hashlib.sha256(normalised_dump(source).encode()).hexdigest()[:20]


def ast_tokens(source: str) -> list[str]:
    """Pre-order node tokens of the normalised AST (node types plus kept names/attributes)."""
    tokens: list[str] = []
    for node in ast.walk(normalise(source)):
        t = type(node).__name__
        if isinstance(node, ast.Name):
            t += ":" + node.id
        elif isinstance(node, ast.Attribute):
            t += ":" + node.attr
        elif isinstance(node, ast.BinOp):
            t += ":" + type(node.op).__name__
        tokens.append(t)
    return tokens


def shingles(tokens: Sequence[str], k: int = 4) -> set[tuple[str, ...]]:
    if len(tokens) < k:
        return {tuple(tokens)}
    return {tuple(tokens[i : i + k]) for i in range(len(tokens) - k + 1)}


def jaccard(a: set, b: set) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / max(1, len(a | b))


def canonical_op(name: str) -> str:
    """`nn.Conv2d`, `F.conv2d`, `torch.conv2d`, `x.conv2d` -> `conv2d`; `Tensor.relu_` -> `relu`."""
    last = name.rsplit(".", 1)[-1]
    return re.sub(r"_+$", "", last).lower()


def op_sequence(source: str) -> list[str]:
    """The canonical op names a task's `Model.forward` applies, in source order."""
    tree = ast.parse(source)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        return []
    attr_ops: dict[str, str] = {}
    forward = None
    for item in model.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            for node in ast.walk(item):
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Call)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Attribute)
                ):
                    callee = _callee_name(node.value.func)
                    if callee and callee not in ("Parameter", "ModuleList", "Sequential"):
                        attr_ops[node.targets[0].attr] = canonical_op(callee)
        elif isinstance(item, ast.FunctionDef) and item.name == "forward":
            forward = item
    if forward is None:
        return []
    ops: list[str] = []

    class _Visitor(ast.NodeVisitor):
        def visit_Call(self, node: ast.Call) -> None:
            self.generic_visit(node)  # arguments first: they are computed before the call
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
                if f.attr in attr_ops:
                    ops.append(attr_ops[f.attr])
                return
            name = _callee_name(f)
            if name and canonical_op(name) not in _NOT_OPS:
                ops.append(canonical_op(name))

        def visit_BinOp(self, node: ast.BinOp) -> None:
            self.generic_visit(node)
            op = _BINOPS.get(type(node.op))
            if op:
                ops.append(op)

    _Visitor().visit(forward)
    return ops


def _callee_name(func: ast.AST) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None
