"""Trusted side: the static checks of model_new.py: imports beyond torch and the extension, names that
reach the judge's objects (frames, dispatch modes, patching), try/except, tensor subclasses, and state
kept between forward calls. The names and their reasons are tables (static_python_rules.py).
"""

from __future__ import annotations

import ast

from cuda_agent.judge.trusted.module_aliases import ModuleAliases
from cuda_agent.judge.trusted.static_finding import Finding
from cuda_agent.judge.trusted.static_python_rules import (
    ALLOWED_IMPORTS,
    ALLOWED_IMPORTS_TEXT,
    BUILTIN_NAMES,
    EXTENSION_MODULE,
    FORBIDDEN_NAMES,
    MUTATING_METHODS,
)


def check_model_new(source: str, path: str = "model_new.py") -> list[Finding]:
    """Findings for model_new.py (empty when it looks clean)."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        return [Finding(path, exc.lineno or 0, f"syntax error: {exc.msg}")]
    findings: list[Finding] = []
    modules: set[str] = set()

    def add(node: ast.AST, message: str) -> None:
        findings.append(Finding(path, getattr(node, "lineno", 0), message))

    for node in ast.walk(tree):  # the names imports bind; every other binding of a module below
        if isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules |= {a.asname or a.name for a in node.names}
    aliases = ModuleAliases(tree, modules)  # `T = torch`, `P = torch.autograd.profiler`, `self.t = torch`, ...
    extension = _extension_names(tree)
    allowed_tries = _tries_outside_forward(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_IMPORTS:
                    add(
                        node,
                        f"import of {alias.name} is not allowed (allowed: {ALLOWED_IMPORTS_TEXT})",
                    )
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if module not in ALLOWED_IMPORTS:
                add(
                    node,
                    f"import from {module} is not allowed (allowed: {ALLOWED_IMPORTS_TEXT})",
                )
            for alias in node.names:
                if alias.name in FORBIDDEN_NAMES:
                    add(node, f"importing `{alias.name}` {FORBIDDEN_NAMES[alias.name]}; not allowed in model_new.py")
        elif isinstance(node, ast.Try | ast.TryStar) and id(node) not in allowed_tries:
            add(
                node,
                "try/except is not allowed outside __init__: a fallback path in forward (or in what forward "
                "calls, or at import) hides failures of your kernels; let errors raise",
            )
        elif isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in FORBIDDEN_NAMES:
            add(node, f"defining `{node.name}` {FORBIDDEN_NAMES[node.name]}; not allowed in model_new.py")
        elif isinstance(node, ast.ClassDef) and any("Tensor" in ast.unparse(b) for b in node.bases):
            add(node, f"class {node.name} subclasses a tensor type; outputs must be plain torch.Tensor")
        elif isinstance(node, ast.Global | ast.Nonlocal):
            add(node, "global/nonlocal state is not allowed: forward must not remember earlier calls")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES and _is_builtin_or_private(node.id):
            add(node, f"`{node.id}` {FORBIDDEN_NAMES[node.id]}; not allowed in model_new.py")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in FORBIDDEN_NAMES
            and (node.attr.startswith("_") or aliases.rooted_in_module(node.value))
        ):
            add(node, f"`.{node.attr}` {FORBIDDEN_NAMES[node.attr]}; not allowed in model_new.py")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and aliases.rooted_in_module(node.value)
            and not (isinstance(node.value, ast.Name) and node.value.id in extension)
        ):
            # torch.autograd._profiler_enabled, torch.cuda._sleep, ...: internals (and in-process probes of
            # the judge's state, e.g. whether a profiler traces this call) have no place in a ModelNew
            add(node, f"`.{node.attr}` is a private attribute of a module (PyTorch internals); not allowed")
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                root = _root_name(target)
                if isinstance(target, ast.Attribute) and aliases.rooted_in_module(target.value):
                    add(node, f"assigning to {ast.unparse(target)} patches a module; not allowed")
                elif isinstance(target, ast.Attribute) and root != "self":
                    # an alias (`E = torch.cuda.Event; E.elapsed_time = f`) patches just the same
                    add(node, f"assigning to {ast.unparse(target)} patches an object other than self; not allowed")
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Attribute):
                    add(node, f"deleting {ast.unparse(target)} patches an object; not allowed")
    findings.extend(_stateful_forward(tree, path))
    return findings


def _stateful_forward(tree: ast.Module, path: str) -> list[Finding]:
    """forward() must be a pure function of its inputs and parameters: state kept between calls is how
    outputs get cached and replayed, or honest behaviour limited to the calls being checked.

    A method named like a mutation called on an imported module itself (`cuda_extension.add(x, y)`, an
    extension function named `add`) is a call of the module's function, not a mutation: state is what
    forward reaches through `self` or a module-level name, or through an attribute of a module."""
    findings = []
    imported = _imported_names(tree)
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for fn in cls.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name == "forward"):
                continue
            local = _locals(fn)
            for node in ast.walk(fn):
                targets: list[ast.expr] = []
                if isinstance(node, ast.Assign):
                    targets = list(node.targets)
                elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                    targets = [node.target]
                for target in targets:
                    for t in target.elts if isinstance(target, ast.Tuple | ast.List) else [target]:
                        if isinstance(t, ast.Attribute | ast.Subscript) and _root_name(t) not in local:
                            findings.append(Finding(path, node.lineno, f"forward assigns to {ast.unparse(t)}: "
                                                    "forward must not keep state between calls"))  # fmt: skip
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "next"
                    and node.args
                    and _root_name(node.args[0]) not in (None, *local)
                ):
                    findings.append(Finding(path, node.lineno, f"forward advances the iterator {ast.unparse(node.args[0])}: "
                                            "an iterator kept between calls is state (a call counter)"))  # fmt: skip
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in MUTATING_METHODS
                    and _root_name(node.func.value) not in (None, *local)
                    and not (isinstance(node.func.value, ast.Name) and node.func.value.id in imported)
                ):
                    findings.append(Finding(path, node.lineno, f"forward mutates {ast.unparse(node.func.value)} "
                                            f"with .{node.func.attr}(): forward must not keep state between calls"))  # fmt: skip
    return findings


def _extension_names(tree: ast.Module) -> set[str]:
    """Names bound to the submission's own extension module and to nothing else: `cuda_extension` or the
    `ext` of `import cuda_extension as ext` at module level, never rebound (a private attribute of it is one
    of the submission's own functions; torch's private attributes stay refused)."""
    bound: dict[str, int] = {}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names = [node.id]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [(a.asname or a.name).split(".")[0] for a in node.names]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        for name in names:
            bound[name] = bound.get(name, 0) + 1
    own = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.Import)
           for alias in node.names if alias.name == EXTENSION_MODULE}  # fmt: skip
    return {name for name in own if bound.get(name) == 1}


def _tries_outside_forward(tree: ast.Module) -> set[int]:
    """The try statements (by id) that run only while the model is constructed: those directly in a class's
    `__init__` (not in a function nested there, which could be kept and called later), where nothing outside
    an `__init__` can run that `__init__` again: no `.__init__` but `super().__init__`, no `type(...)`, and no
    reference to the class (or to a class whose construction builds it) outside `__init__` bodies. A fallback
    in forward, in what forward calls, or at import stays refused; PyTorch compute in forward is refused by
    the op gate whatever the Python around it."""
    inits: dict[str, ast.FunctionDef] = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                inits[cls.name] = fn
    tries = {name: [n for n in _walk_own_body(fn) if isinstance(n, ast.Try | ast.TryStar)] for name, fn in inits.items()}
    inside_init = {id(n) for fn in inits.values() for n in _walk_own_body(fn)}  # a nested function is outside
    # classes whose construction runs a try: their own __init__ has one, or builds such a class (a fixpoint)
    running = {name for name, found in tries.items() if found}
    while True:
        more = {name for name, fn in inits.items()
                if any(isinstance(n, ast.Name) and n.id in running for n in ast.walk(fn))} - running  # fmt: skip
        if not more:
            break
        running |= more
    if not running:
        return set()
    for node in ast.walk(tree):
        if id(node) in inside_init:
            if isinstance(node, ast.Attribute) and node.attr == "__init__" and not _is_super_call(node.value):
                return set()
            continue
        if isinstance(node, ast.Name) and (node.id in running or node.id == "type"):
            return set()
        if isinstance(node, ast.Attribute) and node.attr == "__init__":
            return set()
    return {id(t) for name in running for t in tries.get(name, [])}


def _walk_own_body(fn: ast.FunctionDef):  # type: ignore[no-untyped-def]
    """The nodes of `fn`'s body, not descending into nested functions, lambdas or classes."""
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))


def _is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _imported_names(tree: ast.Module) -> set[str]:
    """Names an `import` binds at module level (`cuda_extension`, `ext` of `import cuda_extension as ext`)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _locals(fn: ast.FunctionDef) -> set[str]:
    """Names bound inside forward (excluding `self`): containers made there may be mutated freely. A name
    bound to something reached through `self` (`cache = self.cache`) is an alias of state, not a local."""
    names = {a.arg for a in fn.args.args if a.arg != "self"}
    aliases: set[str] = set()
    for node in ast.walk(fn):
        reached = isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Attribute | ast.Subscript)
        if reached and _root_name(node.value) == "self":  # type: ignore[union-attr]
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[union-attr]
            aliases |= {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names - aliases


def _is_builtin_or_private(name: str) -> bool:
    """Bare names are checked only for builtins and private/dunder names: `stream` or `seed` may be
    an honest local variable, while `.stream` / `.manual_seed` on a module is not."""
    return name in BUILTIN_NAMES or name.startswith("_")


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
