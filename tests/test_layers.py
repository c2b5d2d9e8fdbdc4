"""Every layer of the package imports only downward (docs/design/architecture.md).

The commands sit on top; below them the users of the agent and the judge (train, eval, service); then
the agent, its workspace, the judge and the task synthesiser, and the task itself at the bottom. A
library module that imports a command (as `train/` and `eval/` once took `collect_tasks` and
`ProgressPrinter` from `commands/solve.py`) makes the library depend on the CLI: that is what this test
refuses, for imports at module level and inside functions alike.
"""

from __future__ import annotations

import ast
from pathlib import Path

import cuda_agent

PACKAGE = Path(cuda_agent.__file__).parent

# Top-level module or package of cuda_agent -> its layer; a lower number is higher up. A module may import
# modules of its own package and of layers with a larger number.
LAYERS: dict[str, int] = {
    "__main__": 0,                            # `python -m cuda_agent`
    "cli": 1,                                 # the `cuda-agent` command
    "commands": 2,                            # its subcommands
    "train": 3, "eval": 3, "service": 3,      # users of the agent and the judge
    "agent": 4,                               # the ReAct loop, its tools and trajectories
    "workspace": 5,                           # the CUDA-Agent folder an episode works in
    "judge": 6, "synth": 6,                   # the reward, and the training tasks' maker
    "tasks": 7,                               # many tasks, from files, folders and parquet files
    "task": 8,                                # one task
    "gpu_lease": 8,                           # the machine-wide GPU lock (imports nothing of ours)
    "__init__": 9,                            # the package itself (its version)
}  # fmt: skip

# Imports between packages of one layer that are part of the design, with the reason.
SIDEWAYS: dict[tuple[str, str], str] = {
    ("train", "service"): "training judges through a judge server's client (service.client.RemoteJudge)",
    ("eval", "service"): "eval judges through a judge server's client (service.client.RemoteJudge)",
}

# Upward imports that exist today and are someone's to remove, with the reason; the test fails once one
# is gone, so that the entry goes too.
KNOWN_UPWARD: dict[tuple[str, str], str] = {
    ("judge/trusted/build.py", "workspace"): "the build takes binding.cpp and binding_registry.h from the "
    "workspace template (workspace.files); the judge's owners move that list below the judge",
}


def _owner(relative: Path) -> str:
    return relative.parts[0].removesuffix(".py")


def _imported(source: str, relative: Path) -> set[str]:
    """Top-level cuda_agent packages the module at `relative` (inside the package) imports: absolute or
    relative imports, at module level or inside functions."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source, filename=str(relative))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = ["cuda_agent", *relative.parts[: len(relative.parts) - node.level]]
            names = [".".join([*base, node.module] if node.module else base)]
            if len(base) == 1 and not node.module:  # `from . import x` at the top of the package
                names = [_from_package(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [_from_package(alias.name) for alias in node.names] if module == "cuda_agent" else [module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "cuda_agent":
                found.add(parts[1] if len(parts) > 1 else "__init__")
    return found


def _from_package(name: str) -> str:
    """What `from cuda_agent import name` imports: the submodule `name`, or a name of the package itself."""
    is_module = (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name / "__init__.py").is_file()
    return f"cuda_agent.{name}" if is_module else "cuda_agent"


def _modules() -> dict[Path, str]:
    """Every module of the package (path relative to it -> source), but the workspace template's files,
    which run inside an episode's workspace rather than as part of the package."""
    paths = [p for p in sorted(PACKAGE.rglob("*.py")) if "template" not in p.relative_to(PACKAGE).parts]
    return {p.relative_to(PACKAGE): p.read_text(encoding="utf-8") for p in paths}


def _violations(modules: dict[Path, str]) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for relative, source in modules.items():
        owner = _owner(relative)
        for target in _imported(source, relative):
            if target == owner or LAYERS[target] > LAYERS[owner] or (owner, target) in SIDEWAYS:
                continue
            out[(relative.as_posix(), target)] = f"{owner} (layer {LAYERS[owner]}) imports {target} (layer {LAYERS[target]})"
    return out


def test_every_package_has_a_layer() -> None:
    owners = {_owner(relative) for relative in _modules()}
    assert owners - set(LAYERS) == set(), "give each new top-level module a layer in LAYERS (and the design doc)"


def test_layers_import_only_downward() -> None:
    found = _violations(_modules())
    new = {where: why for where, why in found.items() if where not in KNOWN_UPWARD}
    assert not new, "move the code these modules need below them:\n" + "\n".join(
        f"  {path} -> {target}: {why}" for (path, target), why in sorted(new.items()))
    gone = set(KNOWN_UPWARD) - set(found)
    assert not gone, f"no longer imported upward, remove from KNOWN_UPWARD: {sorted(gone)}"


def test_the_scan_sees_lazy_relative_and_package_imports() -> None:
    """The scan is what the rule rests on: imports inside functions, relative ones and `from cuda_agent
    import x` all count, and the same import is fine one layer up."""
    lazy = "def f():\n    from cuda_agent.commands.solve import run\n"
    relative = "from ..commands import solve\n"
    package = "from cuda_agent import eval as e\nimport cuda_agent.task\n"
    assert _imported(lazy, Path("train/a.py")) == {"commands"}
    assert _imported(relative, Path("train/verl/b.py")) == {"train"}  # ..commands from train/verl is train.commands
    assert _imported(relative, Path("eval/b.py")) == {"commands"}
    assert _imported(package, Path("agent/c.py")) == {"eval", "task"}
    found = _violations({Path("train/a.py"): lazy, Path("eval/b.py"): relative, Path("agent/c.py"): package,
                         Path("commands/d.py"): lazy + package})
    assert set(found) == {("train/a.py", "commands"), ("eval/b.py", "commands"), ("agent/c.py", "eval")}
