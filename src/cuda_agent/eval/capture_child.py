"""Run a kernel file's top level, `ModelNew.__init__` and forward with load_inline intercepted; print the arguments.

Started by eval/import_capture.py as `python -I capture_child.py`, in the judge's candidate sandbox, with a
JSON request on stdin ({"path", "marker", "reference"}). It imports nothing of cuda_agent: only torch and
the standard library. `torch.utils.cpp_extension.load_inline` is replaced before the file runs by a
recorder that keeps its arguments (bound to load_inline's own signature) and the line of the file that
called it, and returns a stand-in module, so nothing is compiled; `cpp_extension.load` is refused. The
model is constructed on the meta device (no parameter memory, no GPU), with `.cuda()` a no-op, and with
the reference's `get_init_inputs()`, else the file's own, else no arguments; then called once on the
reference's `get_inputs()` made on the meta device, so that an extension built lazily in forward is seen.

Output: one line, the marker followed by JSON {"captures": [{"line", "function", "args"}], "error": ...,
"error_line": ..., "model_new_state": [[key, shape], ...], "model_state": ...}: the state_dict entries of
ModelNew and of the reference Model (both built on the meta device from the same init inputs), which the
importer compares for renamed parameters. Everything else the file prints goes to stderr.
"""

from __future__ import annotations

import inspect
import json
import sys
import traceback
from typing import Any


class _Unbuilt:
    """Stands for the module load_inline would have built: any function of it may be looked up."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)

        def not_built(*_args: Any, **_kwargs: Any) -> Any:
            raise RuntimeError(f"{self._name}.{attr}: not built (import capture)")

        return not_built


def _plain(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return {"__unserializable__": type(value).__name__}


def _state(model: Any) -> list[list[Any]] | None:
    """[name, shape] of every entry of the model's state_dict, in order (what the judge loads)."""
    state_dict = getattr(model, "state_dict", None)
    if not callable(state_dict):
        return None
    return [[str(k), list(getattr(v, "shape", []))] for k, v in state_dict().items()]


def _states(model: Any, reference: dict[str, Any], init_inputs: list[Any], result: dict[str, Any]) -> None:
    """Both models' state_dict entries, for the importer's parameter comparison; a failure here (a
    reference that cannot be built on the meta device) is reported on its own."""
    import torch

    stage = "listing ModelNew's state_dict"
    try:
        result["model_new_state"] = _state(model)
        if isinstance(reference.get("Model"), type):
            stage = "constructing the reference Model on the meta device"
            with torch.device("meta"):
                result["model_state"] = _state(reference["Model"](*init_inputs))
    except BaseException as exc:
        result["state_error"] = f"{stage}: {type(exc).__name__}: {str(exc)[:200]}"


def _forward(model: Any, reference: dict[str, Any], result: dict[str, Any]) -> None:
    """Call the model once on the reference's inputs (made on the meta device): an extension built lazily
    in forward is captured too. What fails here fails after __init__ and is reported on its own."""
    import torch

    if not callable(reference.get("get_inputs")):
        return
    try:
        with torch.device("meta"):
            model(*list(reference["get_inputs"]()))
    except BaseException as exc:
        result["forward_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"


def _caller(path: str) -> tuple[int | None, str]:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == path:
            return frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back  # type: ignore[assignment]
    return None, ""


def _error_line(exc: BaseException, path: str) -> int | None:
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    return lines[-1] if lines else None


def main() -> None:
    request = json.loads(sys.stdin.read())
    path, marker = request["path"], request["marker"]
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # what the file prints must not mix with the answer
    result: dict[str, Any] = {"captures": [], "error": None, "error_line": None}
    try:
        import torch
        import torch.utils.cpp_extension as cpp_extension
    except Exception as exc:  # pragma: no cover - the importer's own environment lacks torch
        result["error"] = f"torch cannot be imported: {exc}"
        print(marker + json.dumps(result), file=real_stdout, flush=True)
        return
    signature = inspect.signature(cpp_extension.load_inline)

    def load_inline(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        line, function = _caller(path)
        result["captures"].append({"line": line, "function": function,
                                   "args": {k: _plain(v) for k, v in bound.arguments.items()}})  # fmt: skip
        return _Unbuilt(str(bound.arguments.get("name", "extension")))

    def load(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("cpp_extension.load(sources=[...]) builds from files: only load_inline converts")

    cpp_extension.load_inline = load_inline
    cpp_extension.load = load
    torch.nn.Module.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]
    torch.Tensor.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]
    stage = "the module's top level"
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        namespace: dict[str, Any] = {"__name__": "model_new", "__file__": path}
        exec(compile(source, path, "exec"), namespace)
        model_new = namespace.get("ModelNew")
        if request.get("construct", True) and isinstance(model_new, type):
            stage = "ModelNew.__init__"
            init_inputs: Any = []
            reference: dict[str, Any] = {"__name__": "reference"}
            if request.get("reference"):
                stage = "the reference's get_init_inputs()"
                exec(compile(request["reference"], "model.py", "exec"), reference)
                if callable(reference.get("get_init_inputs")):
                    init_inputs = list(reference["get_init_inputs"]())
                stage = "ModelNew.__init__"
            elif callable(namespace.get("get_init_inputs")):
                init_inputs = list(namespace["get_init_inputs"]())
            with torch.device("meta"):
                model = model_new(*init_inputs)
            _states(model, reference, init_inputs, result)
            _forward(model, reference, result)
    except BaseException as exc:  # SystemExit too: the file's own exit is an error of the capture
        result["error"] = f"{stage}: {type(exc).__name__}: {str(exc)[:300]}"
        result["error_line"] = _error_line(exc, path)
    print(marker + json.dumps(result), file=real_stdout, flush=True)


if __name__ == "__main__":
    main()
