"""Which names in a model_new.py denote modules, however they were bound (issue 33, class 3).

The AST rules refuse private and profiler attributes *of a module* (`torch.autograd._profiler_enabled`,
`torch.autograd.profiler`), so they must know what a module is. Imports name them (`import torch as T`,
`from torch import autograd as A`), but so does any binding of a module-valued expression: `T = torch`,
`P = torch.autograd.profiler`, chains (`U = T`), tuple unpacking (`T, n = torch, 3`), walrus, loop and
comprehension targets over containers of modules, default arguments (`def f(self, T=torch)`), attributes of
self or of the class (`self.t = torch`, a class-body `T = torch` reached as `self.T`), containers holding a
module (`mods = [torch]; mods[0]`), and functions that return one (`def m(): return torch`). A rule that
resolved only imports was evaded by the first of these (a candidate that read the profiler's state through
`T = torch` ran PyTorch's SDPA on the calls it knew were not traced).

`ModuleAliases` finds the paths ("T", "self.t", "mods") bound to modules, to a fixpoint;
`rooted_in_module` says whether an expression reaches an object through one of them. Defence in depth
like every source rule (readable reasons; spelling can still hide a module from any static analysis):
what the calls run is attributed by the coverage gate, and untraced rounds are compared with traced ones.

Runs in the parent on source text.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

# Attributes of a module passed as call arguments that are constants, not modules (`dtype=torch.float16`):
# a call given one still returns a tensor, not a module.
CONSTANT_ATTRIBUTES = frozenset(
    {"float16", "float32", "float64", "bfloat16", "half", "float", "double", "int8", "int16", "int32", "int64",
     "uint8", "long", "int", "bool", "short", "complex64", "complex128", "cfloat", "cdouble", "channels_last",
     "contiguous_format", "preserve_format", "strided", "sparse_coo", "inf", "nan", "pi", "e", "tau"}
)  # fmt: skip


def _path(node: ast.AST) -> str | None:
    """"self.t", "T", "mods": the dotted path of a Name or an attribute chain of names, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _path(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


class _Aliases:
    def __init__(self, tree: ast.Module, imported: Iterable[str]) -> None:
        self.tree = tree
        self.paths: set[str] = set(imported)
        self.functions: set[str] = set()  # names of functions (and methods) that return a module

    def is_module(self, node: ast.AST | None) -> bool:
        """Whether an expression may evaluate to a module (or a container holding one)."""
        if node is None:
            return False
        path = _path(node)
        if path is not None and path in self.paths:
            return True
        if isinstance(node, ast.Attribute | ast.Subscript):
            return self.is_module(node.value)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(self.is_module(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.is_module(v) for v in node.values)
        if isinstance(node, ast.Starred | ast.NamedExpr | ast.Await):
            return self.is_module(node.value)
        if isinstance(node, ast.IfExp):
            return self.is_module(node.body) or self.is_module(node.orelse)
        if isinstance(node, ast.BoolOp):
            return any(self.is_module(v) for v in node.values)
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if called in self.functions:
                return True
            passed = [*node.args, *(k.value for k in node.keywords)]
            return any(self.is_module(a) and not _constant(a) for a in passed)  # an identity-like function
        return False

    def bind(self, target: ast.AST, value: ast.AST | None, class_name: str | None = None) -> None:
        """Record `target` as a module path if `value` may be a module; unpack tuples pairwise."""
        if isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self.bind(t, v, class_name)
            else:
                for t in target.elts:
                    self.bind(t, value, class_name)
            return
        if isinstance(target, ast.Starred):
            self.bind(target.value, value, class_name)
            return
        path = _path(target)
        if path is None or value is None or _constant(value) or not self.is_module(value):
            return
        self.paths.add(path)
        if class_name and "." not in path:  # a class attribute, reached through self or the class
            self.paths |= {f"self.{path}", f"{class_name}.{path}"}

    def pass_over(self) -> None:
        for node, class_name in _walk_with_class(self.tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self.bind(target, node.value, class_name)
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr):
                self.bind(node.target, node.value, class_name)
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                self.bind(node.target, _element_of(node.iter))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self.bind(node.optional_vars, node.context_expr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                self._defaults(node.args)
                body = node.body if isinstance(node.body, list) else [ast.Return(node.body)]
                returns = (n.value for b in body for n in ast.walk(b) if isinstance(n, ast.Return))
                if not isinstance(node, ast.Lambda) and any(self.is_module(v) for v in returns):
                    self.functions.add(node.name)

    def _defaults(self, args: ast.arguments) -> None:
        positional = [*args.posonlyargs, *args.args]
        for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
            self.bind(ast.Name(arg.arg), default)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            self.bind(ast.Name(arg.arg), default)


def _constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in CONSTANT_ATTRIBUTES


def _element_of(iterable: ast.AST) -> ast.AST:
    """What a loop over `iterable` binds: an element of a literal container, else the iterable itself."""
    if isinstance(iterable, ast.Tuple | ast.List | ast.Set):
        return ast.Tuple(elts=list(iterable.elts))  # a module if any element is one
    return iterable


def _walk_with_class(tree: ast.AST, class_name: str | None = None) -> Iterator[tuple[ast.AST, str | None]]:
    """Every node, with the name of the class whose body (not a method's) holds it (None elsewhere)."""
    for child in ast.iter_child_nodes(tree):
        yield child, class_name
        if isinstance(child, ast.ClassDef):
            yield from _walk_with_class(child, child.name)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _walk_with_class(child, None)
        else:
            yield from _walk_with_class(child, class_name)


class ModuleAliases:
    """The module paths of one model_new.py (see the module docstring)."""

    def __init__(self, tree: ast.Module, imported: Iterable[str]) -> None:
        self._aliases = _Aliases(tree, imported)
        for _ in range(32):  # a fixpoint: each pass can only add paths
            before = (len(self._aliases.paths), len(self._aliases.functions))
            self._aliases.pass_over()
            if (len(self._aliases.paths), len(self._aliases.functions)) == before:
                break

    @property
    def paths(self) -> set[str]:
        return set(self._aliases.paths)

    def rooted_in_module(self, node: ast.AST) -> bool:
        """Whether `node` (the object an attribute is taken of, or assigned into) may be a module."""
        return self._aliases.is_module(node)
