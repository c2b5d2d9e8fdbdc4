"""Tasks: a PyTorch reference in KernelBench format, loaded from a file or a source string.

A task defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`. Loading checks what can
be checked without running anything (syntax, the three names); `check_task_runs` executes the task on the
meta device (or any device given) to catch a model that fails on its own inputs. The judge runs the real
thing on the GPU in its reference worker and reports failures there the same way.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")


class TaskError(ValueError):
    """A task that cannot be used, with a message naming the problem."""


@dataclass(frozen=True)
class Task:
    """A reference problem. `source` is the full text of its `model.py`."""

    name: str
    source: str
    path: Path | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def digest(self) -> str:
        """Content hash of the source: the task's identity in caches."""
        return hashlib.sha256(self.source.encode()).hexdigest()


def load_task(path_or_source: str | Path, *, name: str | None = None) -> Task:
    """Load and statically validate a task from a `.py` file, a folder holding `model.py`, or source text."""
    path: Path | None = None
    if isinstance(path_or_source, Path) or _looks_like_path(path_or_source):
        path = Path(path_or_source)
        if path.is_dir():
            path = path / "model.py"
        if not path.is_file():
            raise TaskError(f"task file not found: {path}")
        source = path.read_text(encoding="utf-8")
        name = name or name_from_path(path)
    else:
        source = str(path_or_source)
        name = name or "task_" + hashlib.sha256(source.encode()).hexdigest()[:12]
    validate_source(source, origin=str(path) if path else name)
    return Task(name=name, source=source, path=path)


def name_from_path(path: Path) -> str:
    """A task's name from its file: the folder's name for a `model.py` (`softmax/model.py` is `softmax`),
    else the file's stem (`relu.py` is `relu`).

    The folder is the resolved one, so `model.py` given bare, `./model.py` or `../x/model.py` names the
    folder it really is in, never "" or "..", which as an episode's folder name would be the runs folder
    itself or its parent. When even that says nothing (a model.py at /), the stem names it."""
    if path.name == "model.py":
        folder = Path(path).resolve().parent.name
        if folder:
            return folder
    return path.stem


def _looks_like_path(text: str) -> bool:
    return "\n" not in text and (text.endswith(".py") or Path(text).exists())


def validate_source(source: str, *, origin: str = "task") -> None:
    """Reject source that cannot be a KernelBench task, naming the problem."""
    try:
        tree = ast.parse(source, filename=origin)
    except SyntaxError as exc:
        raise TaskError(f"{origin}: syntax error at line {exc.lineno}: {exc.msg}") from exc
    defined = _top_level_names(tree)
    missing = [n for n in REQUIRED_NAMES if n not in defined]
    if missing:
        raise TaskError(
            f"{origin}: missing {', '.join(missing)}; a task must define class Model(nn.Module), "
            "get_inputs() and get_init_inputs() at module level"
        )
    model_def = defined["Model"]
    if not isinstance(model_def, ast.ClassDef):
        raise TaskError(f"{origin}: Model must be a class (an nn.Module subclass)")
    if not any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in model_def.body):
        raise TaskError(f"{origin}: class Model has no forward() method")
    for fn in ("get_inputs", "get_init_inputs"):
        if not isinstance(defined[fn], ast.FunctionDef | ast.Assign | ast.Lambda):
            raise TaskError(f"{origin}: {fn} must be a function")


def _top_level_names(tree: ast.Module) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
    return names


def import_task_module(task: Task, module_name: str = "reference_model") -> ModuleType:
    """Execute the task's source as a fresh module. Errors become TaskError naming the line."""
    module = ModuleType(module_name)
    module.__file__ = str(task.path) if task.path else f"<{task.name}>"
    try:
        code = compile(task.source, module.__file__, "exec")
        exec(code, module.__dict__)
    except Exception as exc:
        raise TaskError(f"task {task.name} failed to import: {type(exc).__name__}: {exc}") from exc
    return module


def flatten_tensors(value: Any) -> list[Any]:
    """All tensors in a (nested) list, tuple or dict, in order."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for item in value for t in flatten_tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in flatten_tensors(item)]
    return []



def tensor_bytes(value: Any) -> int:
    """Bytes of all tensors in a (nested) list, tuple or dict."""
    return sum(t.numel() * t.element_size() for t in flatten_tensors(value))

def instantiate(module: ModuleType, task_name: str) -> tuple[Any, list[Any], list[Any]]:
    """Build `Model(*get_init_inputs())` and one `get_inputs()` set, checking their types."""
    try:
        inputs = module.get_inputs()
    except Exception as exc:
        raise TaskError(f"task {task_name}: get_inputs() failed: {type(exc).__name__}: {exc}") from exc
    inputs = check_inputs(inputs, task_name)
    model, init_inputs = build_model(module, task_name)
    return model, init_inputs, inputs


def check_inputs(inputs: Any, task_name: str) -> list[Any]:
    """What get_inputs() returned, as a list, if it is a list or tuple holding at least one tensor."""
    if not isinstance(inputs, list | tuple):
        raise TaskError(f"task {task_name}: get_inputs() must return a list, got {type(inputs).__name__}")
    if not flatten_tensors(list(inputs)):
        raise TaskError(f"task {task_name}: get_inputs() returned no tensors; the model needs tensor inputs")
    return list(inputs)


def build_model(module: ModuleType, task_name: str) -> tuple[Any, list[Any]]:
    """`Model(*get_init_inputs())` and the init inputs, without drawing any inputs (which on the CPU
    cost the judge about 0.4 s per 128 MB)."""
    try:
        init_inputs = list(module.get_init_inputs())
    except Exception as exc:
        raise TaskError(f"task {task_name}: get_init_inputs() failed: {type(exc).__name__}: {exc}") from exc
    try:
        model = module.Model(*init_inputs)
    except Exception as exc:
        raise TaskError(
            f"task {task_name}: Model(*get_init_inputs()) failed: {type(exc).__name__}: {exc}"
        ) from exc
    return model, init_inputs


class MetaUnsupported(TaskError):
    """The task uses an op without a meta implementation: it cannot be run shape-only, which says nothing
    about whether it is broken."""


def check_task_runs(
    task: Task, device: str = "meta", watch: contextlib.AbstractContextManager[Any] | None = None
) -> list[tuple[tuple[int, ...], str]]:
    """Run the reference once on `device` and return the output shapes and dtypes.

    The meta device checks shapes and dtypes without computing, which makes this cheap enough for the CPU;
    ops without a meta implementation raise `MetaUnsupported` rather than a plain TaskError. `watch` is
    entered around the forward call only (e.g. an op recorder, as the CPU checks' task probe passes).
    """
    import torch

    module = import_task_module(task)
    with torch.device(device):
        model, _, inputs = instantiate(module, task.name)
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
        try:
            with torch.no_grad(), watch or contextlib.nullcontext():
                output = model.eval()(*inputs)
        except NotImplementedError as exc:
            if device == "meta":
                raise MetaUnsupported(f"task {task.name}: cannot check on the meta device: {exc}") from exc
            raise TaskError(f"task {task.name}: Model fails on its own inputs: {exc}") from exc
        except Exception as exc:
            message = re.sub(r"\s+", " ", str(exc)).strip()
            if device == "meta" and re.search(r"\bmeta\b", message, re.IGNORECASE):
                # a limit of the probe, not of the task (`torch.Generator(device=x.device)`: "META device type
                # not an accelerator"; `.item()` of a meta tensor): checked on the GPU instead
                raise MetaUnsupported(f"task {task.name}: cannot check on the meta device: {message}") from exc
            raise TaskError(
                f"task {task.name}: Model fails on its own inputs: {type(exc).__name__}: {message}"
            ) from exc
    outputs = flatten_tensors(output)
    if not outputs:
        raise TaskError(f"task {task.name}: Model.forward returned no tensors")
    return [(tuple(t.shape), str(t.dtype).removeprefix("torch.")) for t in outputs]
