"""`cuda-agent import kernelbench`: a KernelBench `ModelNew` built with `load_inline` -> our layout.

KernelBench (and leaderboards built on it) publish kernels as one Python file whose `ModelNew` builds
its extension at import time with `torch.utils.cpp_extension.load_inline(name, cpp_sources,
cuda_sources, functions=[...], extra_cuda_cflags=...)`. Our judge builds `kernels/` into
`cuda_extension` instead, so each call becomes, without touching the kernel code:

- `kernels/<name>.cu`: the `cuda_sources`, joined as load_inline joins them, after the same implicit
  headers it adds (torch/types.h, cuda.h, cuda_runtime.h) and the `-D` macros of `extra_cuda_cflags`;
- `kernels/<name>_binding.cpp`: `<torch/extension.h>`, the `cpp_sources` unchanged, and a generated
  REGISTER_BINDING doing what load_inline's generated module does (`m.def(f, wrap_pybind_function(f))`
  for each of `functions`; a source with its own PYBIND11_MODULE gets that block as the registration);
- `model_new.py`: the file itself with the load_inline call replaced by `cuda_extension` (so
  `self.op.f(x)` calls our module), its import dropped, and the source constants only the call used
  removed; everything else as it was;
- `model.py`: the benchmark's reference for the file's level and problem (`--tasks`), matched from the
  file name (`level_1_problem_19_...`, `level1/19_ReLU.py`, `19_ReLU.py` under a level folder);
- `.task.json`: level, problem, name and task id, for `eval --submissions`.

The arguments are read with `ast` where they are constant (eval/import_values.py: literals, module
constants and the calling function's locals, concatenations, f-strings, `.format` and friends); a call
whose arguments are not is captured by running the file's top level, `ModelNew.__init__` and forward in
the judge's sandbox with load_inline intercepted (eval/import_capture.py); a call neither determines refuses
the file with a reason naming the construct. Every construct that cannot be converted mechanically (no
load_inline at all, `cpp_extension.load` of files, Triton, include paths, clashing function names, a
missing reference) refuses the file with the reason. Flags the judge's build does not take are kept as
notes. With a reference, ModelNew's parameters are compared with Model's (eval/import_params.py): renamed
ones that pair up by shape in order get a renaming `load_state_dict` in model_new.py.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cuda_agent.eval.bundle import TASK_META
from cuda_agent.eval.import_capture import Captured
from cuda_agent.eval.import_params import rename_map, with_renaming
from cuda_agent.eval.import_values import Unresolved, loop_around, scope_of, value
from cuda_agent.eval.kernelbench import BenchTask, find, slug_of

# load_inline's parameters in order (torch 2.x), for positional arguments.
LOAD_INLINE_PARAMS = (
    "name", "cpp_sources", "cuda_sources", "sycl_sources", "functions", "extra_cflags", "extra_cuda_cflags",
    "extra_sycl_cflags", "extra_ldflags", "extra_include_paths", "build_directory", "verbose", "with_cuda",
    "with_sycl", "is_python_module", "with_pytorch_error_handling", "keep_intermediates", "use_pch",
    "no_implicit_headers",
)
# Arguments about where and how verbosely to build: no effect on the kernels.
IGNORED_PARAMS = ("build_directory", "verbose", "keep_intermediates", "use_pch", "with_cuda")
# nvcc flags the judge's build already applies (or that only change diagnostics); extended lambdas are
# turned on for a unit whose compile asks for them (trusted/build.py).
# --use_fast_math is not among them: the judge builds without it (trusted/build_commands.py), and a note says so.
SAME_CUDA_FLAGS = {"-O3", "--expt-relaxed-constexpr",
                   "--expt-extended-lambda", "--extended-lambda", "-lineinfo", "--ptxas-options=-v", "-Xptxas=-v", ""}  # fmt: skip
LINKED_LIBRARIES = {"-lcublas", "-lcublasLt", "-lcudnn", "-lcudart", "-lcuda", "-lc10", "-ltorch", ""}
IMPLICIT_CUDA_HEADERS = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
IMPLICIT_CPP_HEADER = "#include <torch/extension.h>\n"
MAX_FILE_BYTES = 4 << 20  # the judge's own limit for a kernels/ file

_LEVEL_PROBLEM = re.compile(r"level[_-]?(\d+)[_-]problem[_-]?(\d+)", re.IGNORECASE)
_LEVEL_SLASH = re.compile(r"(?:^|/)level(\d+)/(\d+)_([^/]+?)(?:\.py)?$", re.IGNORECASE)
_LEVEL_FLAT = re.compile(r"^level(\d+)_(\d+)_(.+?)(?:\.py)?$", re.IGNORECASE)
_PROBLEM_FILE = re.compile(r"^(\d+)_(.+?)\.py$")
_PYBIND_MODULE = re.compile(r"PYBIND11_MODULE\s*\(\s*TORCH_EXTENSION_NAME\s*,\s*(\w+)\s*\)")


class Refused(Exception):
    """The file cannot be converted mechanically; the message says why."""


@dataclass
class Conversion:
    """What became of one input file: `converted` (with notes) or `refused` (with the reason)."""

    source: str
    status: str
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    out: str | None = None
    task_id: str | None = None
    extensions: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---- finding the calls ----------------------------------------------------------------------------------


def _aliases(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names the file calls load_inline by, and names bound to the cpp_extension module."""
    direct, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("torch.utils.cpp_extension", "torch.utils"):
            for alias in node.names:
                if node.module == "torch.utils.cpp_extension" and alias.name == "load_inline":
                    direct.add(alias.asname or alias.name)
                if node.module == "torch.utils" and alias.name == "cpp_extension":
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch.utils.cpp_extension" and alias.asname:
                    modules.add(alias.asname)
    return direct, modules


def _is_call_to(node: ast.AST, attr: str, direct: set[str], modules: set[str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in direct and attr == "load_inline"
    if isinstance(func, ast.Attribute) and func.attr == attr:
        chain = ast.unparse(func.value)
        return chain in modules or chain == "torch.utils.cpp_extension"
    return False


def _refuse_other_builds(tree: ast.Module, modules: set[str]) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            if any(n == "triton" or n.startswith("triton.") for n in names):
                raise Refused("uses Triton: only CUDA C++ built with load_inline converts to our layout")
            if (isinstance(node, ast.ImportFrom) and node.module == "torch.utils.cpp_extension"
                    and any(a.name == "load" for a in node.names)):  # fmt: skip
                raise Refused("builds from source files with cpp_extension.load(sources=[...]); only "
                              "load_inline (sources as strings in the file) converts mechanically")  # fmt: skip
        if _is_call_to(node, "load", set(), modules):
            raise Refused("builds from source files with cpp_extension.load(sources=[...]); only load_inline "
                          "converts mechanically")  # fmt: skip


# ---- one call ---------------------------------------------------------------------------------------------


@dataclass
class Extension:
    name: str
    cpp: str
    cuda: str
    functions: dict[str, str] | None
    defines: list[str]
    notes: list[str]
    implicit_headers: bool
    error_handling: bool
    call: ast.Call
    used_names: set[str]


def _arguments(call: ast.Call) -> dict[str, ast.AST]:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        raise Refused("load_inline is called with *args or **kwargs: its arguments cannot be read statically")
    if len(call.args) > len(LOAD_INLINE_PARAMS):
        raise Refused("load_inline is called with more positional arguments than it takes")
    given: dict[str, ast.AST] = dict(zip(LOAD_INLINE_PARAMS, call.args, strict=False))
    for keyword in call.keywords:
        if keyword.arg not in LOAD_INLINE_PARAMS:
            raise Refused(f"load_inline has no argument {keyword.arg!r} (a newer torch?)")
        given[keyword.arg] = keyword.value  # type: ignore[index]
    return given


def _sources(value: Any, what: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)  # as load_inline joins them into one file
    raise Refused(f"{what} must be a string or a list of strings, got {type(value).__name__}")


def _flags(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise Refused(f"{what} must be a list of strings")


def _static_values(call: ast.Call, env: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by parameter name, each evaluated statically; Unresolved names the first that
    is not constant (prefixed with the argument)."""
    values: dict[str, Any] = {}
    for key, node in _arguments(call).items():
        if key in IGNORED_PARAMS:
            continue
        try:
            values[key] = value(node, env)
        except Unresolved as exc:
            if key == "name":  # only names the files (`f"ext_{uuid4().hex}"`): not worth running the file for
                values["name"] = None
                values["__name_note__"] = f"extension name `{ast.unparse(node)[:60]}` is computed at run time"
                continue
            raise Unresolved(f"argument {key}: {exc}") from exc
    return values


def _used_names(call: ast.Call) -> set[str]:
    return {n.id for node in _arguments(call).values() for n in ast.walk(node) if isinstance(n, ast.Name)}


def _extension(call: ast.Call, values: dict[str, Any], index: int) -> Extension:
    """One extension from load_inline's argument values (read statically or captured by running the file)."""
    name_note = values.get("__name_note__")
    values = {k: v for k, v in values.items() if k not in IGNORED_PARAMS and k != "__name_note__"}
    for key, given in values.items():
        if isinstance(given, dict) and "__unserializable__" in given:
            raise Refused(f"load_inline argument {key} is a {given['__unserializable__']}, not strings")
    used = _used_names(call)
    notes: list[str] = [f"{name_note}; files named ext{index}"] if name_note else []
    name = values.get("name") or f"ext{index}"
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
        name = f"ext{index}"
        notes.append(f"extension name {values.get('name')!r} is not an identifier; files named {name}")
    if "cpp_sources" not in values:
        raise Refused("load_inline without cpp_sources")
    cpp = _sources(values.get("cpp_sources"), "cpp_sources")
    cuda = _sources(values.get("cuda_sources"), "cuda_sources")
    if _sources(values.get("sycl_sources"), "sycl_sources"):
        raise Refused("sycl_sources: only CUDA converts")
    if _flags(values.get("extra_include_paths"), "extra_include_paths"):
        raise Refused("extra_include_paths point at headers outside the file, which a submission cannot carry")
    if values.get("is_python_module") is False:
        raise Refused("is_python_module=False (a library loaded for its side effects) has no cuda_extension form")
    functions = values.get("functions")
    if isinstance(functions, str):
        functions = [functions]
    if isinstance(functions, list):
        if not all(isinstance(f, str) for f in functions):
            raise Refused("functions must name functions (strings)")
        functions = {f: f for f in functions}
    elif functions is not None and not isinstance(functions, dict):
        raise Refused(f"functions must be a list or dict, got {type(functions).__name__}")
    if functions is None and not _PYBIND_MODULE.search(cpp):
        raise Refused("functions=None and no PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) in cpp_sources: "
                      "nothing says what the extension exposes")  # fmt: skip
    for fn in functions or {}:
        if not re.fullmatch(r"[A-Za-z_]\w*", fn):
            raise Refused(f"function name {fn!r} is not a C++ identifier")
    defines: list[str] = []
    for flag in _flags(values.get("extra_cuda_cflags"), "extra_cuda_cflags"):
        if flag.startswith("-D") and len(flag) > 2:
            macro, _, val = flag[2:].partition("=")
            defines.append(f"#define {macro} {val}".rstrip() if val else f"#define {macro}")
        elif flag not in SAME_CUDA_FLAGS:
            notes.append(f"extra_cuda_cflags {flag!r} not applied: the judge builds every .cu with its own "
                         "flags (-O3 --expt-relaxed-constexpr, no --use_fast_math: write __expf/__sinf where you want "
                         "the intrinsics; --extended-lambda where nvcc asks)")  # fmt: skip
    for flag in _flags(values.get("extra_cflags"), "extra_cflags"):
        if flag.startswith("-D") and len(flag) > 2:
            notes.append(f"extra_cflags {flag!r} applies to the C++ sources only; written as a #define there")
        elif flag not in ("", "-O3", "-O2"):
            notes.append(f"extra_cflags {flag!r} not applied: the judge builds .cpp units with its own flags")
    for flag in _flags(values.get("extra_ldflags"), "extra_ldflags"):
        if flag not in LINKED_LIBRARIES and not flag.startswith("-L"):
            notes.append(f"extra_ldflags {flag!r} not applied: the judge links cudart, cuBLAS(Lt) and cuDNN only")
    if values.get("extra_sycl_cflags"):
        notes.append("extra_sycl_cflags ignored (no SYCL sources)")
    cpp_defines = [f"#define {f[2:].partition('=')[0]} {f[2:].partition('=')[2]}".rstrip()
                   for f in _flags(values.get("extra_cflags"), "extra_cflags") if f.startswith("-D") and len(f) > 2]  # fmt: skip
    if cpp_defines:
        cpp = "\n".join(cpp_defines) + "\n" + cpp
    implicit = values.get("no_implicit_headers") is not True
    return Extension(name=name, cpp=cpp, cuda=cuda, functions=functions, defines=defines, notes=notes,
                     implicit_headers=implicit, error_handling=values.get("with_pytorch_error_handling") is not False,
                     call=call, used_names=used)  # fmt: skip


# ---- writing -------------------------------------------------------------------------------------------------


def _binding_source(ext: Extension, origin: str) -> str:
    register = f"cuda_agent_register_{ext.name}"
    head = [f"// {ext.name}_binding.cpp -- imported by `cuda-agent import kernelbench` from {origin}.",
            "// The cpp_sources of its load_inline call follow unchanged, after the header load_inline adds;",
            "// the registration at the end is generated: it binds what load_inline's module would have.",
            *([IMPLICIT_CPP_HEADER.rstrip()] if ext.implicit_headers else []),
            *(["#include <torch/csrc/Exceptions.h>"] if ext.error_handling and not ext.implicit_headers
              and ext.functions is not None else []),
            '#include "../binding_registry.h"', ""]  # fmt: skip
    body = ext.cpp
    if ext.functions is None:  # the source's own module block becomes the registration function
        body = _PYBIND_MODULE.sub(lambda m: f"static void {register}(pybind11::module& {m.group(1)})", body, count=1)
        tail = ["", f"REGISTER_BINDING({ext.name}, {register});", ""]
    else:
        wrap = ext.error_handling
        defs = [f'    m.def("{fn}", {"torch::wrap_pybind_function(" + fn + ")" if wrap else "&" + fn}, {json.dumps(doc)});'
                for fn, doc in ext.functions.items()]  # fmt: skip
        tail = ["", "// generated: load_inline(functions=[...])", f"static void {register}(pybind11::module& m) {{",
                *defs, "}", f"REGISTER_BINDING({ext.name}, {register});", ""]  # fmt: skip
    return "\n".join(head) + body.rstrip("\n") + "\n" + "\n".join(tail)


def _cuda_source(ext: Extension, origin: str) -> str:
    head = [f"// {ext.name}.cu -- imported by `cuda-agent import kernelbench` from {origin}.",
            "// The cuda_sources of its load_inline call follow unchanged, after the headers load_inline adds"
            + (" and the -D macros of its extra_cuda_cflags." if ext.defines else ".")]  # fmt: skip
    prelude = IMPLICIT_CUDA_HEADERS if ext.implicit_headers else ""
    return "\n".join(head) + "\n" + "".join(d + "\n" for d in ext.defines) + prelude + ext.cuda


def _line_offsets(data: bytes) -> list[int]:
    offsets = [0]
    for i, byte in enumerate(data):
        if byte == 10:
            offsets.append(i + 1)
    return offsets


def _span(node: ast.AST, offsets: list[int]) -> tuple[int, int]:
    return (offsets[node.lineno - 1] + node.col_offset, offsets[node.end_lineno - 1] + node.end_col_offset)  # type: ignore[attr-defined]


def _statement_span(node: ast.stmt, offsets: list[int], data: bytes) -> tuple[int, int]:
    """The whole lines of a statement (with its newline), for removal."""
    start = offsets[node.lineno - 1]
    end_line = node.end_lineno or node.lineno
    end = offsets[end_line] if end_line < len(offsets) else len(data)
    return start, end


def _is_build_env(node: ast.stmt) -> bool:
    """`os.environ[...] = ...` / `os.environ.setdefault(...)` at module level: settings for load_inline's
    build (TORCH_CUDA_ARCH_LIST, MAX_JOBS ...), which the judge's build does not read."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return isinstance(target, ast.Subscript) and ast.unparse(target.value) == "os.environ"
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return isinstance(func, ast.Attribute) and ast.unparse(func.value) == "os.environ"
    return False


def rewrite_model_new(source: str, tree: ast.Module, extensions: list[Extension],
                      notes: list[str] | None = None) -> str:  # fmt: skip
    """The file with each load_inline call replaced by `cuda_extension`; the imports of cpp_extension, the
    constants only those calls read and the build's environment settings removed (with `import os`
    when nothing else uses it); `import cuda_extension` added. Everything else stays as it was."""
    notes = notes if notes is not None else []
    data = source.encode("utf-8")
    offsets = _line_offsets(data)
    calls = list({id(e.call): e.call for e in extensions}.values())  # a helper's call may build several
    edits: list[tuple[int, int, bytes]] = [(*_span(c, offsets), b"cuda_extension") for c in calls]
    used = set().union(*(e.used_names for e in extensions)) if extensions else set()
    removed: list[ast.stmt] = []
    for node in tree.body:
        if _is_build_env(node):
            removed.append(node)
            notes.append(f"line {node.lineno}: `{ast.unparse(node)[:60]}` dropped (a setting of load_inline's build; "
                         "the judge builds for the GPU it runs on)")  # fmt: skip
    skip = {id(n) for c in calls for n in ast.walk(c)} | {id(n) for r in removed for n in ast.walk(r)}

    def loads(exclude: set[int]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in exclude:
                counts[node.id] = counts.get(node.id, 0) + 1
        return counts

    # The module's statements and those of the functions that call load_inline (the locals that built
    # their sources), each statement on lines of its own.
    candidates = [n for body in [tree.body, *_calling_bodies(tree, calls)] for n in body
                  if not any(o is not n and o.lineno <= (n.end_lineno or n.lineno) and n.lineno <= (o.end_lineno or o.lineno)
                             for o in body)]  # fmt: skip
    while True:  # constants only the calls read, and then constants only those read
        elsewhere = loads(skip | {id(n) for r in removed for n in ast.walk(r)})
        more = []
        for node in candidates:
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node not in removed \
                    and not any(c is node.value for c in calls):  # fmt: skip
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                read = used | {n.id for r in removed for n in ast.walk(r) if isinstance(n, ast.Name)}
                if names and len(names) == len(targets) and all(n in read and not elsewhere.get(n) for n in names):
                    more.append(node)
        if not more:
            break
        removed.extend(more)
    for node in removed:
        edits.append((*_statement_span(node, offsets, data), b""))
    # Imports only the removed code read (os for os.environ, textwrap for dedent ...) go too: the judge's
    # static checks allow a short list of imports in model_new.py.
    read_removed = used | {n.id for r in removed for n in ast.walk(r) if isinstance(n, ast.Name)}

    def only_removed_read(alias: ast.alias) -> bool:
        bound = alias.asname or alias.name.split(".")[0]
        return bound in read_removed and not elsewhere.get(bound)

    for node in tree.body:  # imports: cpp_extension goes, and what only the removed code read
        if isinstance(node, ast.ImportFrom) and node.module not in ("torch.utils.cpp_extension", "torch.utils"):
            keep = [a for a in node.names if not only_removed_read(a)]
            if len(keep) != len(node.names):
                text = "" if not keep else f"from {'.' * node.level}{node.module or ''} import " + ", ".join(
                    a.name + (f" as {a.asname}" if a.asname else "") for a in keep) + "\n"  # fmt: skip
                edits.append((*_statement_span(node, offsets, data), text.encode()))
        elif isinstance(node, ast.ImportFrom):
            keep = [a for a in node.names if not (a.name == "load_inline" or (node.module == "torch.utils"
                    and a.name == "cpp_extension" and not elsewhere.get(a.asname or a.name)))]  # fmt: skip
            if len(keep) != len(node.names):
                text = "" if not keep else f"from {node.module} import " + ", ".join(
                    a.name + (f" as {a.asname}" if a.asname else "") for a in keep) + "\n"  # fmt: skip
                edits.append((*_statement_span(node, offsets, data), text.encode()))
        elif isinstance(node, ast.Import):
            keep_text = []
            for a in node.names:
                if a.name == "torch.utils.cpp_extension":
                    if a.asname is None and not _imports_torch(tree):
                        keep_text.append("torch")  # `import torch.utils.cpp_extension` also bound `torch`
                    elif elsewhere.get(a.asname):
                        keep_text.append(f"{a.name} as {a.asname}")
                        notes.append(f"`import {a.name} as {a.asname}` kept: the file uses {a.asname} beyond "
                                     "load_inline (the judge's static checks will reject that import)")  # fmt: skip
                elif only_removed_read(a):
                    continue
                else:
                    keep_text.append(a.name + (f" as {a.asname}" if a.asname else ""))
            if len(keep_text) != len(node.names) or any(a.name == "torch.utils.cpp_extension" for a in node.names):
                text = ("import " + ", ".join(dict.fromkeys(keep_text)) + "\n") if keep_text else ""
                edits.append((*_statement_span(node, offsets, data), text.encode()))
    # `import cuda_extension` after the leading imports (and a module docstring).
    anchor = 0
    for index, node in enumerate(tree.body):
        docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if isinstance(node, ast.Import | ast.ImportFrom) or docstring:
            anchor = _statement_span(node, offsets, data)[1]
        else:
            break
    edits.append((anchor, anchor, b"import cuda_extension  # built from kernels/ (was: load_inline)\n"))
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        data = data[:start] + text + data[end:]
    return re.sub(r"\n{4,}", "\n\n\n", data.decode("utf-8"))  # what removed statements leave: 2 blank lines


def _calling_bodies(tree: ast.Module, calls: list[ast.Call]) -> list[list[ast.stmt]]:
    """The bodies of the functions (and of the blocks inside them) that hold a load_inline call."""
    inside = {id(n) for c in calls for n in ast.walk(c)}
    bodies: list[list[ast.stmt]] = []
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) and any(id(n) in inside for n in ast.walk(function)):
            for node in ast.walk(function):
                for name in ("body", "orelse", "finalbody"):
                    body = getattr(node, name, None)
                    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                        bodies.append(body)
    return bodies


def _imports_torch(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Import) and any(a.name == "torch" and a.asname is None for a in n.names)
               for n in tree.body)  # fmt: skip


# ---- matching ------------------------------------------------------------------------------------------------


def level_problem(path: Path, base: Path | None = None) -> tuple[int, int, str | None] | None:
    """(level, problem, name) from a file's name and the folders above it, or None."""
    rel = path.relative_to(base).as_posix() if base and path != base and path.is_relative_to(base) else path.name
    full = path.as_posix()
    for text in (rel, full):
        if m := _LEVEL_PROBLEM.search(text):
            return int(m.group(1)), int(m.group(2)), None
        if m := _LEVEL_SLASH.search(text):
            return int(m.group(1)), int(m.group(2)), m.group(3)
    if m := _LEVEL_FLAT.match(path.name):
        return int(m.group(1)), int(m.group(2)), m.group(3)
    if (m := _PROBLEM_FILE.match(path.name)) and (lvl := re.fullmatch(r"level[_-]?(\d+)", path.parent.name)):
        return int(lvl.group(1)), int(m.group(1)), m.group(2)
    return None


# ---- the command's work ------------------------------------------------------------------------------------


def convert_file(path: Path, out_root: Path, tasks_dir: Path | None, base: Path | None = None,
                 taken: set[str] | None = None) -> Conversion:
    """Convert one file into out_root/level<L>_<P>_<Name>/ (or refuse it, with the reason); a second file
    for the same problem goes to ...-2/ (`taken` holds the folders already written)."""
    conv = Conversion(source=str(path), status="refused")
    taken = taken if taken is not None else set()
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            conv.reason = f"larger than {MAX_FILE_BYTES >> 20} MiB: not a kernel file"
            return conv
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        conv.reason = f"cannot read: {exc}"
        return conv
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        conv.reason = f"not Python: syntax error at line {exc.lineno}: {exc.msg}"
        return conv
    try:
        where = level_problem(path, base)
        bench: BenchTask | None = None
        if tasks_dir is not None:  # before anything runs the file
            if where is None:
                raise Refused("cannot tell its level and problem from the file name (expected e.g. "
                              "level_1_problem_19_..., level1/19_ReLU.py or 19_ReLU.py under level1/)")  # fmt: skip
            bench = find(tasks_dir, where[0], where[1])
            if bench is None:
                raise Refused(f"{tasks_dir} has no level {where[0]} problem {where[1]} to judge it against")
        run = _Run(path, source, bench.task.source if bench else None)
        extensions, notes = _extensions(tree, run)
        if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
            raise Refused("no class ModelNew at module level")
        renamed = _parameters(run, notes) if bench is not None else {}
        conv.notes = notes
        name = bench.name if bench else (where[2] if where and where[2] else path.stem)
        folder_name = slug_of(where[0], where[1], name) if where else path.stem
        dest, n = out_root / folder_name, 1
        while str(dest) in taken:  # another sample of the same problem: its next episode
            n += 1
            dest = out_root / f"{folder_name}-{n}"
        taken.add(str(dest))
        _write(dest, path, source, tree, extensions, bench, where, name, notes, renamed)
    except Refused as exc:
        conv.reason = str(exc)
        return conv
    conv.status, conv.out = "converted", str(dest)
    conv.task_id = bench.task_id if bench else (f"level{where[0]}/{where[1]}_{name}" if where else None)
    if bench is None:
        conv.notes.append("no reference model.py written: pass --tasks KERNELBENCH_DIR to add the benchmark's")
    conv.extensions = [{"name": e.name, "functions": sorted(e.functions) if e.functions else "PYBIND11_MODULE",
                        "files": [f"kernels/{e.name}.cu"] * bool(e.cuda) + [f"kernels/{e.name}_binding.cpp"]}
                       for e in extensions]  # fmt: skip
    return conv


class _Run:
    """The file run once, sandboxed, with load_inline intercepted (eval/import_capture.py), when first
    asked for: by a call no static reading determines, or by the parameter comparison."""

    def __init__(self, path: Path, source: str, reference: str | None) -> None:
        self.path, self.source, self.reference = path, source, reference
        self._result: Captured | None = None

    def __call__(self) -> Captured:
        if self._result is None:
            from cuda_agent.eval.import_capture import capture

            self._result = capture(self.path, self.source, self.reference)
        return self._result


def _extensions(tree: ast.Module, run: _Run) -> tuple[list[Extension], list[str]]:
    """Every load_inline call's extension: read statically where its arguments are constant, else
    captured by running the file (eval/import_capture.py); a call neither can determine refuses the file
    with both reasons."""
    direct, modules = _aliases(tree)
    _refuse_other_builds(tree, modules)
    calls = sorted((n for n in ast.walk(tree) if _is_call_to(n, "load_inline", direct, modules)),
                   key=lambda c: (c.lineno, c.col_offset))  # fmt: skip
    if not calls:
        raise Refused("no load_inline call: nothing to convert (a PyTorch-only ModelNew, or an extension built "
                      "some other way)")  # fmt: skip
    found: list[tuple[ast.Call, dict[str, Any], str]] = []  # (call, values, how they were read)
    pending: dict[int, str] = {}
    for call in calls:
        _arguments(call)  # *args/**kwargs and unknown arguments refuse the file before anything runs
        if looped := loop_around(tree, call):
            pending[id(call)] = looped
            continue
        try:
            found.append((call, _static_values(call, scope_of(tree, call)), ""))
        except Unresolved as exc:
            pending[id(call)] = str(exc)
    if pending:
        found += _captured(tree, [c for c in calls if id(c) in pending], pending, run())
        found.sort(key=lambda f: (f[0].lineno, f[0].col_offset))
    extensions: list[Extension] = []
    for index, (call, values, how) in enumerate(found):
        extension = _extension(call, values, index)
        if how:
            extension.notes.insert(0, f"extension {extension.name}: {how}")
        extensions.append(extension)
    names = [e.name for e in extensions]
    if len(set(names)) != len(names):
        raise Refused(f"two load_inline calls build an extension named {sorted(n for n in names if names.count(n) > 1)[0]!r}")
    seen: dict[str, str] = {}
    for ext in extensions:
        for fn in ext.functions or {}:
            if fn in seen:
                raise Refused(f"function {fn!r} is exposed by both {seen[fn]!r} and {ext.name!r}; one cuda_extension "
                              "module cannot hold both")  # fmt: skip
            seen[fn] = ext.name
    notes = [n for e in extensions for n in e.notes]
    return extensions, notes


def _captured(tree: ast.Module, calls: list[ast.Call], reasons: dict[int, str],
              run: Captured) -> list[tuple[ast.Call, dict[str, Any], str]]:  # fmt: skip
    """The arguments of `calls` as running the file's top level, ModelNew.__init__ and forward gave them (one
    call site may build several extensions: a helper called twice); Refused for a call it did not reach."""
    spans = sorted(calls, key=lambda c: (c.end_lineno or c.lineno) - c.lineno)  # innermost call first
    by_call: dict[int, list[dict[str, Any]]] = {}
    for made in run.calls:
        line = made.get("line")
        call = next((c for c in spans if line is not None and c.lineno <= line <= (c.end_lineno or c.lineno)), None)
        if call is not None and made["args"] not in by_call.setdefault(id(call), []):
            by_call[id(call)].append(made["args"])
    found = []
    for call in calls:
        where = _where(tree, call)
        if not by_call.get(id(call)):
            ran = "running the file's top level, ModelNew.__init__ and forward with load_inline intercepted"
            if run.error:
                why = f"{ran} stopped at {'line ' + str(run.error_line) + ' in ' if run.error_line else ''}{run.error}"
            elif run.forward_error:
                why = f"{ran} did not reach it: forward on the task's inputs (meta device) stopped: {run.forward_error}"
            else:
                why = f"{ran} never reached it"
            raise Refused(f"load_inline at line {call.lineno}{where}: {reasons[id(call)]}; {why}")
        how = (f"the arguments of load_inline at line {call.lineno}{where} were captured by running the file "
               f"(sandboxed, nothing compiled): {reasons[id(call)]}")  # fmt: skip
        found += [(call, args, how) for args in by_call[id(call)]]
    return found


def _parameters(run: _Run, notes: list[str]) -> dict[str, str]:
    """The renaming of the reference's state_dict keys to ModelNew's (empty when they match or cannot be
    paired; a note says which)."""
    result = run()
    if result.model_state is None or result.model_new_state is None:
        why = result.error or result.state_error or "no state_dict"
        notes.append(f"parameters not compared with Model's (constructing both on the meta device: {why})")
        return {}
    mapping, problem = rename_map(result.model_state, result.model_new_state)
    if mapping is None:
        notes.append(f"{problem}: the judge cannot load the reference's weights into it")
        return {}
    if mapping:
        shown = ", ".join(f"{k} -> {v}" for k, v in list(mapping.items())[:6])
        notes.append(f"ModelNew names {len(mapping)} parameter(s) differently from Model (same shapes, same order): "
                     f"{shown}{' ...' if len(mapping) > 6 else ''}; model_new.py gets a load_state_dict that renames "
                     "the reference's keys")  # fmt: skip
    return mapping


def _where(tree: ast.Module, call: ast.Call) -> str:
    """` in ModelNew.__init__` for a call inside functions and classes; empty at module level."""
    names: list[str] = []

    def walk(node: ast.AST, trail: list[str]) -> bool:
        for child in ast.iter_child_nodes(node):
            inner = [*trail, child.name] if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
                else trail  # fmt: skip
            if child is call:
                names.extend(inner)
                return True
            if walk(child, inner):
                return True
        return False

    walk(tree, [])
    return f" in {'.'.join(names)}" if names else ""


def _write(dest: Path, path: Path, source: str, tree: ast.Module, extensions: list[Extension],
           bench: BenchTask | None, where: tuple[int, int, str | None] | None, name: str,
           notes: list[str], renamed: dict[str, str] | None = None) -> None:  # fmt: skip
    model_new = rewrite_model_new(source, tree, extensions, notes)
    if renamed:
        try:
            model_new = with_renaming(model_new, ast.parse(model_new), renamed)
        except (SyntaxError, ValueError, StopIteration) as exc:
            raise Refused(f"ModelNew renames parameters, and the renaming cannot be added: {exc}") from exc
    try:
        ast.parse(model_new)
    except SyntaxError as exc:  # a rewrite that breaks the file is a refusal, never a broken submission
        raise Refused(f"the rewritten model_new.py does not parse (line {exc.lineno}: {exc.msg})") from exc
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "kernels").mkdir(parents=True)
    origin = re.sub(r"[^\w.+-]", "_", path.name)  # goes into C++ comments: nothing that could end one
    for ext in extensions:
        if ext.cuda:
            (dest / "kernels" / f"{ext.name}.cu").write_text(_cuda_source(ext, origin), encoding="utf-8")
        (dest / "kernels" / f"{ext.name}_binding.cpp").write_text(_binding_source(ext, origin), encoding="utf-8")
    (dest / "model_new.py").write_text(model_new, encoding="utf-8")
    meta: dict[str, Any] = {"imported_from": str(path), "importer": "kernelbench", "name": name}
    if where:
        meta.update(level=where[0], problem=where[1])
    if bench is not None:
        (dest / "model.py").write_text(bench.task.source, encoding="utf-8")
        meta.update(task_id=bench.task_id, reference=str(bench.path))
    (dest / TASK_META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def input_files(path: Path) -> list[Path]:
    """The .py files to import: the file given, or every .py under the folder (sorted)."""
    path = Path(path)
    if path.is_file():
        return [path]
    if path.is_dir():
        return sorted(p for p in path.rglob("*.py") if p.is_file() and "__pycache__" not in p.parts)
    raise FileNotFoundError(f"{path} does not exist")


def import_kernelbench(path: Path, out_root: Path, tasks_dir: Path | None = None) -> list[Conversion]:
    files = input_files(path)
    base = Path(path) if Path(path).is_dir() else Path(path).parent
    out_root.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    return [convert_file(f, out_root, tasks_dir, base, taken) for f in files]


def conversions_table(results: list[Conversion]) -> str:
    headers = ("file", "result", "task", "output / reason")
    rows = [headers]
    for r in results:
        rows.append((Path(r.source).name, r.status, r.task_id or "-", r.out or r.reason))
        rows.extend(("", "note", "", note) for note in r.notes)
    widths = [max(len(row[i]) for row in rows) for i in range(len(headers) - 1)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)), row[-1]]).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  " + "-" * 15)
    done = sum(r.status == "converted" for r in results)
    lines.append(f"{done} converted, {len(results) - done} refused")
    return "\n".join(lines)
