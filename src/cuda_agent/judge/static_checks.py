"""Static checks of a submission's sources, with reasons an agent can act on.

They reject the obvious before anything runs: Python that walks frames, patches modules, starts
threads, imports beyond torch and the extension, or wraps the custom path in try/except; C++/CUDA that
starts threads or processes, calls back into Python, uses private streams or L2 persistence, or uses
cuBLAS/cuDNN where the task has no matrix product/convolution. The dynamic gates (op gate, coverage,
timing cross-checks) stand behind them; these checks exist so the common cheats fail fast and clearly.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ALLOWED_IMPORTS = frozenset(
    {"torch", "torch.nn", "torch.nn.functional", "cuda_extension", "math", "typing", "__future__",
     "collections", "dataclasses", "functools", "numbers", "enum"}
)  # fmt: skip

# Names that have no business in a ModelNew: introspection, patching, concurrency, I/O, precision flags.
FORBIDDEN_NAMES = {
    "_python_dispatch": "touches PyTorch's dispatch modes (the judge's op gate)",
    "_disable_current_modes": "disables PyTorch dispatch modes (the judge's op gate)",
    "_unset_dispatch_mode": "disables PyTorch dispatch modes (the judge's op gate)",
    "_get_dispatch_mode": "inspects PyTorch dispatch modes",
    "_set_dispatch_mode": "changes PyTorch dispatch modes",
    "_get_current_dispatch_mode": "inspects PyTorch dispatch modes",
    "_DisableTorchDispatch": "disables PyTorch dispatch",
    "DisableTorchFunction": "disables PyTorch function overrides",
    "_DisableTorchFunction": "disables PyTorch function overrides",
    "__torch_function__": "defines a tensor subclass hook (lazy outputs are not allowed)",
    "__torch_dispatch__": "defines a dispatch hook",
    "is_torch_function_mode_enabled": "inspects PyTorch modes",
    "_getframe": "walks stack frames",
    "_current_frames": "walks stack frames",
    "f_back": "walks stack frames",
    "f_locals": "reads other frames' variables",
    "f_globals": "reads other frames' globals",
    "get_objects": "searches the garbage collector's objects",
    "get_referrers": "searches the garbage collector's objects",
    "__builtins__": "touches builtins",
    "__import__": "imports dynamically",
    "__subclasses__": "walks the class hierarchy",
    "globals": "reads module globals",
    "eval": "evaluates code",
    "exec": "executes code",
    "compile": "compiles code",
    "open": "opens files",
    "setattr": "patches attributes",
    "getattr": "looks attributes up dynamically",
    "vars": "reads object namespaces",
    "delattr": "patches attributes",
    "allow_tf32": "changes PyTorch's matmul precision",
    "set_float32_matmul_precision": "changes PyTorch's matmul precision",
    "allow_fp16_reduced_precision_reduction": "changes PyTorch's matmul precision",
    "allow_bf16_reduced_precision_reduction": "changes PyTorch's matmul precision",
    "manual_seed": "seeds the random generator (inputs are secret)",
    "seed": "seeds the random generator (inputs are secret)",
    "profiler": "touches the profiler",
    "_C": "uses PyTorch internals (torch._C)",
    "_ops": "uses PyTorch internals",
    "_VariableFunctions": "calls PyTorch ops through internals",
    "ops": "calls ATen ops directly (torch.ops)",
    "register_forward_hook": "installs hooks",
    "register_forward_pre_hook": "installs hooks",
}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


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

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules.add((alias.asname or alias.name).split(".")[0])
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
                modules.add(alias.asname or alias.name)
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
            and (node.attr.startswith("_") or _root_name(node) in modules)
        ):
            add(node, f"`.{node.attr}` {FORBIDDEN_NAMES[node.attr]}; not allowed in model_new.py")
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                root = _root_name(target)
                if isinstance(target, ast.Attribute) and root in modules:
                    add(node, f"assigning to {ast.unparse(target)} patches a module; not allowed")
    findings.extend(_stateful_forward(tree, path))
    return findings


MUTATING_METHODS = frozenset(
    {"append", "extend", "insert", "update", "setdefault", "add", "pop", "popitem", "clear", "remove",
     "discard", "__setitem__", "copy_", "fill_", "zero_"}
)  # fmt: skip


def _stateful_forward(tree: ast.Module, path: str) -> list[Finding]:
    """forward() must be a pure function of its inputs and parameters: state kept between calls is how
    outputs get cached and replayed, or honest behaviour limited to the calls being checked."""
    findings = []
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
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in MUTATING_METHODS
                    and _root_name(node.func.value) not in (None, *local)
                ):
                    findings.append(Finding(path, node.lineno, f"forward mutates {ast.unparse(node.func.value)} "
                                            f"with .{node.func.attr}(): forward must not keep state between calls"))  # fmt: skip
    return findings


def _locals(fn: ast.FunctionDef) -> set[str]:
    """Names bound inside forward (excluding `self`): containers made there may be mutated freely."""
    names = {a.arg for a in fn.args.args if a.arg != "self"}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


BUILTIN_NAMES = frozenset(
    {"eval", "exec", "compile", "open", "setattr", "delattr", "getattr", "globals", "vars", "__import__"}
)


def _is_builtin_or_private(name: str) -> bool:
    """Bare names are checked only for builtins and private/dunder names: `stream` or `seed` may be
    an honest local variable, while `.stream` / `.manual_seed` on a module is not."""
    return name in BUILTIN_NAMES or name.startswith("_")


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


# --- C++ / CUDA -----------------------------------------------------------------------------------

CPP_RULES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"\bstd::(thread|jthread|async)\b|\bpthread_create\b"),
        "starts a thread; all work must finish inside the call",
    ),
    (re.compile(r"\b(fork|vfork|execv\w*|execl\w*|system|popen|posix_spawn)\s*\("), "starts a process"),
    (re.compile(r"\b(dlopen|dlsym)\s*\("), "loads libraries at run time"),
    (re.compile(r"\b(socket|connect|getaddrinfo)\s*\("), "opens network connections"),
    (
        re.compile(r"\b(fopen|freopen|open|creat|unlink|remove|rename)\s*\(|\bstd::[io]?fstream\b"),
        "opens or changes files",
    ),
    (re.compile(r"\b(getenv|setenv|putenv|unsetenv)\s*\("), "reads or changes the environment"),
    (
        re.compile(
            r"\bPy[A-Z][A-Za-z_]*\s*\(|\b(py|pybind11)::(exec|eval|module_?::import)\b|\.attr\s*\(\s*\"__"
        ),
        "calls into the Python interpreter; bindings may only define functions",
    ),
    (re.compile(r"__attribute__\s*\(\s*\(\s*constructor"), "runs code at load time"),
    (
        re.compile(
            r"accessPolicyWindow|cudaLimitPersistingL2CacheSize|cudaDeviceSetLimit|cudaCtxResetPersistingL2Cache"
        ),
        "changes L2 cache persistence or device limits",
    ),
    (
        re.compile(
            # A static tensor (or container of tensors) *variable*; a static function returning one,
            # `static torch::Tensor my_op(torch::Tensor x) {`, is the normal binding and is not matched.
            r"\bstatic\s+(?:const\s+)?(?:(?:torch|at)::Tensor\b|std::\w+\s*<[^;(){}]*?(?:torch|at)::Tensor"
            r"[^;(){}]*?>)(?!\s*[&*]?\s*\w+\s*\([^;{]*\)\s*(?:const\s*|noexcept\s*)*\{)"
        ),
        "keeps tensors or containers across calls (cached outputs); forward must not keep state",
    ),
    (
        re.compile(r"cudaMemcpy\w*\s*\([^;]*DeviceToHost|cudaMemcpyDefault"),
        "copies device data to the host during forward",
    ),
    (
        re.compile(r"globalContext\s*\(\s*\)\s*\.\s*set\w*|\bsetAllowTF32\w*|\bsetFloat32MatmulPrecision\b"),
        "changes PyTorch's global math settings (TF32, precision); the reference runs with the defaults",
    ),
    (
        re.compile(r"\bcudaDeviceReset\b|\bcudaSetDevice\b|\bcudaDeviceSetCacheConfig\b"),
        "changes device state",
    ),
    (
        re.compile(r"\bcudaMallocManaged\b|\bcudaHostAlloc\b|\bcudaMallocHost\b"),
        "allocates managed or pinned memory",
    ),
    (
        re.compile(
            r"\bat::native::|\bat::_ops::|\bat::cuda::blas::|\bat::cpu::|\bat::cuda::(?!getCurrentCUDA\w*Handle|getCurrentCUDAStream|getCurrentDeviceProperties|CUDAStream|OptionalCUDAGuard|CUDAGuard)\w+\s*\("
        ),
        "calls PyTorch's operator implementations directly; write the kernel",
    ),
    (
        re.compile(
            r"\bcublas[SDCZH](axpy|scal|copy|swap|dot\w*|nrm2|asum|amax|amin|rot\w*|gemv\w*|ger\w*|sym\w*|hem\w*|tr[ms][mv]\w*|geam|dgmm)(_v2)?\b|\bcublasLt?(Axpy|Scal|Dot|Nrm2)Ex\b"
        ),
        "uses cuBLAS for something other than a GEMM (cuBLAS is allowed for GEMMs only)",
    ),
    (
        re.compile(r"CUBLAS_COMPUTE_32F_FAST_\w+|CUBLAS_TF32_TENSOR_OP_MATH|CUBLAS_COMPUTE_32F_FAST_TF32"),
        "lowers the precision of an fp32 GEMM (fast fp16/bf16/tf32 modes) beyond what the reference uses",
    ),
]
CUBLAS_USE = re.compile(r"\bcublas\w*\s*\(")
CUDNN_USE = re.compile(r"\bcudnn\w*\s*\(")
GEMM_OPS = frozenset(
    {
        "mm",
        "addmm",
        "bmm",
        "baddbmm",
        "matmul",
        "linear",
        "addmv",
        "mv",
        "_scaled_mm",
        "addbmm",
        "einsum",
        "tensordot",
        "dot",
        "vdot",
    }
)
CONV_OPS = frozenset(
    {
        "convolution",
        "_convolution",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "cudnn_convolution",
        "cudnn_convolution_transpose",
    }
)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def check_kernel_sources(kernels_dir: Path, reference_ops: set[str] | None = None) -> list[Finding]:
    """Findings for kernels/. `reference_ops` (ATen op names the reference ran) decides whether cuBLAS
    and cuDNN are allowed; None skips that rule (unknown task)."""
    findings: list[Finding] = []
    for path in sorted(kernels_dir.rglob("*")):
        if not path.is_file() or path.suffix not in (".cu", ".cpp", ".h", ".cuh", ".hpp", ".inc", ".inl"):
            continue
        shown = f"kernels/{path.relative_to(kernels_dir)}"
        text = _strip_comments(path.read_text(errors="replace"))
        for pattern, message in CPP_RULES:
            match = pattern.search(text)
            if match:
                line = text.count("\n", 0, match.start()) + 1
                findings.append(Finding(shown, line, f"`{match.group(0).strip()}` {message}"))
        if reference_ops is not None:
            if CUBLAS_USE.search(text) and not (reference_ops & GEMM_OPS):
                findings.append(Finding(shown, 0, "uses cuBLAS but the task has no matrix product"))
            if CUDNN_USE.search(text) and not (reference_ops & CONV_OPS):
                findings.append(Finding(shown, 0, "uses cuDNN but the task has no convolution"))
    return findings


def describe(findings: list[Finding], limit: int = 5) -> str:
    shown = "; ".join(str(f) for f in findings[:limit])
    more = f" (and {len(findings) - limit} more)" if len(findings) > limit else ""
    return shown + more
