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
    BUILTIN_NAMES,
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
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_IMPORTS:
                    add(
                        node,
                        f"import of {alias.name} is not allowed (allowed: torch, torch.nn, cuda_extension, math)",
                    )
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if module not in ALLOWED_IMPORTS:
                add(
                    node,
                    f"import from {module} is not allowed (allowed: torch, torch.nn, cuda_extension, math)",
                )
            for alias in node.names:
                if alias.name in FORBIDDEN_NAMES:
                    add(node, f"importing `{alias.name}` {FORBIDDEN_NAMES[alias.name]}; not allowed in model_new.py")
        elif isinstance(node, ast.Try | ast.TryStar):
            add(
                node,
                "try/except is not allowed: a fallback path hides failures of your kernels; let errors raise",
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
