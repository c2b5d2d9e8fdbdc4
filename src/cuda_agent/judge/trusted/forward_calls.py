"""Whether `ModelNew.forward` can reach `cuda_extension` at all, read from the text of `model_new.py`.

On a GPU the op gate sees what forward runs and refuses PyTorch doing the task's work. `--build-only`
(and `utils/compile.sh`) run on a CPU where nothing of the candidate runs, so a forward of plain PyTorch
with no kernel call passed there as `built`, and the surprise came only on the GPU. The source can say
more than nothing: if no code that forward can reach names the extension, forward never calls it.

The reading is conservative: it reports only when it is sure. Starting from forward (and ModelNew's
dunder methods, which Python may call instead), it follows every function, class, method, module-level
binding and attribute assignment of the file that the code reached so far names, by name alone (an
attribute `x.relu` reaches every method or attribute called `relu`). Any mention of a name bound to the
extension (`import cuda_extension as ext`, `from cuda_extension import f`, `k = ext.f`, `self.k = f`) on
the way means "may call", and so does a file it does not understand (no ModelNew, no forward). Dynamic
reaches (`getattr`, `globals`, `__dict__`, `importlib`) are refused by the static checks themselves.

Trust boundary: runs in the parent on source text; nothing is imported or run. Only `--build-only`
verdicts use it; a full judgment's op gate decides on what forward ran.
"""

from __future__ import annotations

import ast

EXTENSION = "cuda_extension"
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
NEVER_CALLED = ("never calls {ext}: on a GPU the judge's op gate refuses forward doing the task's work with "
                "PyTorch ops; call your kernels ({ext}.<function>) from forward")  # fmt: skip


def forward_never_calls_extension(source: str) -> tuple[int, str] | None:
    """(line, message) when `ModelNew.forward` certainly never reaches `cuda_extension`; None when it may,
    or when the file cannot be read that far (a syntax error, no ModelNew or no forward)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    model = classes.get("ModelNew")
    if model is None:
        return None
    start = _methods_of(model, classes)
    forward = next((fn for fn in start if fn.name == "forward"), None)
    if forward is None:
        return None
    extension = _extension_names(tree)
    if not extension:
        return forward.lineno, f"model_new.py never imports {EXTENSION}, so ModelNew.forward " + (
            NEVER_CALLED.format(ext=EXTENSION))  # fmt: skip
    reach = _Reach(tree, classes, extension)
    if reach.may_call([fn for fn in start if fn.name == "forward" or _dunder(fn.name)]):
        return None
    return forward.lineno, "ModelNew.forward " + NEVER_CALLED.format(ext=EXTENSION)


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and name != "__init__"


def _methods_of(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> list[ast.FunctionDef]:
    """The class's methods, then those of its bases defined in the same file (the first `forward` wins)."""
    out: list[ast.FunctionDef] = []
    seen: set[str] = set()
    todo = [cls]
    while todo:
        current = todo.pop(0)
        if current.name in seen:
            continue
        seen.add(current.name)
        out += [n for n in current.body if isinstance(n, _DEFS)]
        todo += [classes[b.id] for b in current.bases if isinstance(b, ast.Name) and b.id in classes]
    return out


def _extension_names(tree: ast.Module) -> set[str]:
    """Names an import anywhere in the file binds to the extension or something of it."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == EXTENSION or alias.name.startswith(EXTENSION + "."):
                    names.add(alias.asname or alias.name.split(".")[0])
        elif (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and (node.module or "").split(".")[0] == EXTENSION
        ):
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def _mentioned(node: ast.AST) -> set[str]:
    """Every name and attribute name in `node`."""
    out: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            out.add(child.id)
        elif isinstance(child, ast.Attribute):
            out.add(child.attr)
    return out


def _stored(node: ast.AST) -> set[str]:
    """Names and attribute names `node` binds (assignment targets, loop and `with` targets, walrus, and
    functions or classes defined inside it, as under a module-level `if`)."""
    out: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, (*_DEFS, ast.ClassDef)):
            out.add(child.name)
        elif isinstance(child, ast.Name) and _stores(child):
            out.add(child.id)
        elif isinstance(child, ast.Attribute) and _stores(child):
            out.add(child.attr)
    return out


def _stores(node: ast.Name | ast.Attribute) -> bool:
    return isinstance(node.ctx, ast.Store)


class _Reach:
    """What code of the file a set of functions can reach, by name, and whether any of it names the
    extension (directly or through a name bound to something that names it)."""

    def __init__(self, tree: ast.Module, classes: dict[str, ast.ClassDef], extension: set[str]) -> None:
        self.tainted = set(extension)
        # name -> the code it leads to: functions and classes by name, methods and class attributes by
        # attribute name, and every statement that binds a name outside a function body.
        self.leads: dict[str, list[ast.AST]] = {}
        for node in tree.body:
            self._index(node)
        for node in ast.walk(tree):  # attribute assignments inside functions: `self.k = ...` leads to them
            if isinstance(node, _DEFS):
                for name in {a.attr for a in ast.walk(node) if isinstance(a, ast.Attribute) and _stores(a)}:
                    self.leads.setdefault(name, []).append(node)
        self._taint(tree, classes)

    def _index(self, node: ast.stmt) -> None:
        if isinstance(node, _DEFS):
            self.leads.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.ClassDef):
            self.leads.setdefault(node.name, []).append(node)
            for child in node.body:
                self._index(child)
        elif not isinstance(node, ast.Import | ast.ImportFrom):
            for name in _stored(node):
                self.leads.setdefault(name, []).append(node)

    def _taint(self, tree: ast.Module, classes: dict[str, ast.ClassDef]) -> None:
        """Names bound outside functions to something that names the extension (`k = cuda_extension.f`,
        `OPS = {"f": ext.f}`, a class attribute) carry the extension too."""
        bodies = [tree.body, *(c.body for c in classes.values())]
        statements = [n for body in bodies for n in body if not isinstance(n, (*_DEFS, ast.ClassDef))]
        changed = True
        while changed:
            changed = False
            for node in statements:
                if _mentioned(node) & self.tainted and not _stored(node) <= self.tainted:
                    self.tainted |= _stored(node)
                    changed = True

    def may_call(self, start: list[ast.FunctionDef]) -> bool:
        todo: list[ast.AST] = list(start)
        seen: set[int] = set()
        while todo:
            node = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            names = _mentioned(node)
            if names & self.tainted:
                return True
            for name in names:
                todo += self.leads.get(name, [])
        return False
