"""Every `from cuda_agent... import name` in the project's scripts, benchmarks, recipes and tests names
something that exists, including imports inside functions.

Much of that code runs only on a GPU (benchmarks/, scripts/device/, tests/gpu/), where a device session is
rare: a symbol renamed in src/ breaks it silently until a GPU run fails (two GPU tests did on 2026-12-07,
one for a changed signature). Imports inside functions are not run by collecting or importing the file, so
they are read here from the syntax tree and resolved on the CPU, which takes a few seconds."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OURS = ("cuda_agent", "tests")


def files() -> list[Path]:
    globs = ("benchmarks/*.py", "scripts/**/*.py", "recipes/**/*.py", "tests/**/*.py")
    return sorted({p for g in globs for p in ROOT.glob(g)})


def imported_names(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) of each import of our own packages in `path`; name None for `import module`."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in OURS:
            found += [(node.lineno, str(node.module), a.name) for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names if a.name.split(".")[0] in OURS]
    return found


def resolves(module: str, name: str | None) -> str | None:
    """None when `module` (and `name` in it, an attribute or a submodule) exists; else why not."""
    try:
        loaded = importlib.import_module(module)
    except Exception as exc:  # any import failure is the finding
        return f"import {module} fails: {exc!r}"[:300]
    if name is None or hasattr(loaded, name):
        return None
    if hasattr(loaded, "__path__") and importlib.util.find_spec(f"{module}.{name}") is not None:
        return None  # a submodule not imported yet
    return f"{module} has no {name}"


def test_every_import_of_our_own_code_resolves() -> None:
    broken, checked = [], 0
    for path in files():
        for line, module, name in imported_names(path):
            checked += 1
            why = resolves(module, name)
            if why:
                broken.append(f"{path.relative_to(ROOT)}:{line}: {why}")
    assert checked > 1000, checked  # the walk reached the files (1,239 imports on 2026-12-07)
    assert not broken, "\n".join(broken)


def test_a_renamed_symbol_is_found(tmp_path: Path) -> None:
    """The check itself: an import inside a function of a name src/ does not have is reported."""
    script = tmp_path / "bench.py"
    script.write_text("def main():\n    from cuda_agent.judge.candidate.pad import PadKernel, NoSuchPad\n")
    found = imported_names(script)
    assert [(line, name) for line, _, name in found] == [(2, "PadKernel"), (2, "NoSuchPad")]
    assert resolves("cuda_agent.judge.candidate.pad", "PadKernel") is None
    assert resolves("cuda_agent.judge.candidate.pad", "NoSuchPad") == "cuda_agent.judge.candidate.pad has no NoSuchPad"
    assert "import cuda_agent.no_such_module fails" in str(resolves("cuda_agent.no_such_module", None))
