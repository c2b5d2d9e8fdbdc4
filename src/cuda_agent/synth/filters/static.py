"""Static filters: what can be rejected from the source alone, before any process or GPU is spent.

* the task must be a valid KernelBench task (the same check `cuda_agent.task` applies);
* imports are limited to torch, math and transformers: a training task that imports anything else would
  not run in the judge's sandbox;
* `forward` (and any other method but `__init__`) must call no random op, and `__init__` must build no
  random module. The deny list joins the ops the catalog crawl found random with a name rule for the
  families of random ops (rand*, dropout*, bernoulli, ...), so it also covers LLM-written code;
* near-duplicates (same normalised AST: equal up to names, sizes and literals) of a task already seen
  are dropped.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from cuda_agent.synth.astnorm import ast_digest
from cuda_agent.synth.filters import Verdict, passed, rejected

STAGE = "static"
ALLOWED_IMPORTS = ("torch", "math", "transformers", "typing", "__future__")
_RANDOM_NAME = re.compile(
    r"^(rand\w*|bernoulli\w*|multinomial|normal_?|poisson|uniform_|exponential_|geometric_|cauchy_|log_normal_|"
    r"random_|\w*dropout\w*|rrelu\w*|fractional_max_pool\w*|\w*Dropout\w*|RReLU|FractionalMaxPool\w*|"
    r"gumbel_softmax|seed|manual_seed)$"
)


class StaticFilter:
    """Stateful static filter: remembers the digests it accepted to drop later near-duplicates."""

    def __init__(self, random_ops: Iterable[str] = (), seen: Iterable[str] = ()) -> None:
        self.random_ops = set(random_ops)
        self.seen: set[str] = set(seen)

    def check(self, source: str, *, remember: bool = True) -> tuple[Verdict, str | None]:
        """(verdict, normalised-AST digest). The digest is None when the source does not parse."""
        from cuda_agent.task import TaskError, validate_source

        try:
            validate_source(source, origin="synth")
        except TaskError as exc:
            return rejected(STAGE, "invalid_task", str(exc)), None
        tree = ast.parse(source)
        bad = disallowed_imports(tree)
        if bad:
            return rejected(STAGE, "disallowed_import", ", ".join(bad)), None
        rnd = self.random_calls(tree)
        if rnd:
            return rejected(STAGE, "random_op", ", ".join(rnd)), None
        digest = ast_digest(source)
        if digest in self.seen:
            return rejected(STAGE, "duplicate", digest), digest
        if remember:
            self.seen.add(digest)
        return passed(STAGE), digest

    def forget(self, digest: str) -> None:
        """Let a digest in again (its task was rejected later, so a resized variant may still pass)."""
        self.seen.discard(digest)

    def is_random_name(self, name: str) -> bool:
        return name in self.random_ops or bool(_RANDOM_NAME.match(name))

    def random_calls(self, tree: ast.Module) -> list[str]:
        model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
        if model is None:
            return []
        found: list[str] = []
        for item in model.body:
            if not isinstance(item, ast.FunctionDef):
                continue
            # __init__ may draw parameters with torch.randn; there only random *modules* count.
            in_init = item.name == "__init__"
            for node in ast.walk(item):
                if not isinstance(node, ast.Call):
                    continue
                name = (
                    node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                )
                if not name or (in_init and not name[:1].isupper()):
                    continue
                if self.is_random_name(name) and name not in found:
                    found.append(name)
        return found


def disallowed_imports(tree: ast.Module) -> list[str]:
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or "."]
        else:
            continue
        for n in names:
            if n.split(".")[0] not in ALLOWED_IMPORTS:
                bad.append(n)
    calls = [
        n.func.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in ("__import__", "exec", "eval")
    ]
    return bad + calls


def check_static(source: str, random_ops: Iterable[str] = ()) -> Verdict:
    """One-shot static check of a single task (no duplicate memory)."""
    return StaticFilter(random_ops).check(source, remember=False)[0]
