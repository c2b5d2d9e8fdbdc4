"""Static checks of a submission's sources, with reasons an agent can act on.

They reject the obvious before anything runs: Python that walks frames, patches modules, starts
threads, imports beyond torch and the extension, or wraps the custom path in try/except; C++/CUDA that
starts threads or processes, calls back into Python, uses private streams or L2 persistence, or uses
cuBLAS/cuDNN where the task has no matrix product/convolution. The dynamic gates (op gate, coverage,
timing cross-checks) stand behind them; these checks exist so the common cheats fail fast and clearly.

Trust boundary: runs in the parent on source text and on the symbols the built binary imports. The source
rules are defence in depth (spellings evade them; they exist for fast, readable reasons); the import rules
read the linked binary, which spelling cannot change.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.judge.trusted import driver_gate, library_rules
from cuda_agent.judge.trusted.library_rules import CONV_OPS, GEMM_OPS
from cuda_agent.judge.trusted.module_aliases import ModuleAliases

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
    # Reaching the judge's objects without naming them (issue 12, class 1): namespaces, class attributes,
    # code and frame objects, and the modules other modules expose as attributes (torch.cuda.os).
    "__dict__": "reads or patches an object's namespace",
    "__setattr__": "patches attributes",
    "__delattr__": "patches attributes",
    "__getattribute__": "looks attributes up dynamically",
    "__class__": "reaches an object's class (to patch it)",
    "__globals__": "reads a function's module globals",
    "__code__": "reads or replaces code objects",
    "__closure__": "reads closures",
    "__func__": "reaches the function behind a method",
    "__self__": "reaches the object behind a method",
    "__mro__": "walks the class hierarchy",
    "__bases__": "walks the class hierarchy",
    "__base__": "walks the class hierarchy",
    "__module__": "reaches a class's module",
    "__traceback__": "walks stack frames",
    "tb_frame": "walks stack frames",
    "gi_frame": "walks stack frames",
    "cr_frame": "walks stack frames",
    "f_code": "walks stack frames",
    "__loader__": "reaches the import system",
    "__spec__": "reaches the import system",
    "modules": "reads the table of loaded modules",
    "os": "reaches the operating system through another module",
    "sys": "reaches the interpreter through another module",
    "subprocess": "starts processes",
    "ctypes": "calls native code",
    "importlib": "imports dynamically",
    "builtins": "touches builtins",
    "gc": "searches the garbage collector's objects",
    "inspect": "inspects frames and objects",
    "threading": "starts threads",
    "multiprocessing": "starts processes",
    "locals": "reads frame variables",
    # Found by the issue-12 adversarial cases (tests/adversarial, classes 1, 3, 4, 10): setattr, file writes,
    # try/except and the input seed by other names.
    "update_wrapper": "sets attributes of another object (functools.update_wrapper is a setattr)",
    "from_file": "maps a file into memory (reads or writes files)",
    "initial_seed": "reads the random generator's seed (inputs are secret)",
    "get_rng_state": "reads the random generator's state (inputs are secret)",
    "__exit__": "defines a context manager's exit (one that returns True swallows errors like try/except)",
    "__aexit__": "defines a context manager's exit (one that returns True swallows errors like try/except)",
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


MUTATING_METHODS = frozenset(
    {"append", "extend", "insert", "update", "setdefault", "add", "pop", "popitem", "clear", "remove",
     "discard", "__setitem__", "copy_", "fill_", "zero_"}
)  # fmt: skip


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


BUILTIN_NAMES = frozenset(
    {"eval", "exec", "compile", "open", "setattr", "delattr", "getattr", "globals", "vars", "__import__",
     "locals", "breakpoint"}
)  # fmt: skip


def _is_builtin_or_private(name: str) -> bool:
    """Bare names are checked only for builtins and private/dunder names: `stream` or `seed` may be
    an honest local variable, while `.stream` / `.manual_seed` on a module is not."""
    return name in BUILTIN_NAMES or name.startswith("_")


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


# --- C++ / CUDA -----------------------------------------------------------------------------------
# Rules match the submission's own code *after preprocessing* (preprocess.py: line splices joined, macros
# and token pastes expanded, comments gone), so the spelling of a call does not matter; what the linker
# binds is checked too (`check_imports`), which no spelling changes.

_PY_OBJECTS = r"(?<!std)::\s*(?:object|handle|function|cpp_function|capsule|dict|globals|exec|eval)\b"
CPP_RULES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"\bstd::(thread|jthread|async)\b|\bpthread_create\b|\bthrd_create\b"),
        "starts a thread; all work must finish inside the call",
    ),
    (
        re.compile(r"\b(fork|vfork|clone|execv\w*|execl\w*|system|popen|posix_spawnp?|syscall|_Fork|__libc_fork|"
                   r"fexecve|execveat|pidfd_spawnp?|__clone\w*)\s*\("),
        "starts a process",
    ),
    (re.compile(r"\b(dlopen|dlmopen|dlsym|dlvsym)\s*\("), "loads libraries at run time"),
    (re.compile(r"\b(socket|connect|getaddrinfo)\s*\("), "opens network connections"),
    (
        re.compile(r"\bcuGetProcAddress\w*"),
        "reaches the CUDA driver API by name; ask cudaGetDriverEntryPointByVersion for one of the allowed "
        "driver functions instead (SKILL.md, Libraries and build)",
    ),
    (
        re.compile(
            r"\b(fopen|fopen64|freopen|open|open64|openat|openat64|creat|unlink|unlinkat|remove|rename|"
            r"renameat2?|__open\w*|__openat\w*|__fopen\w*)\s*\(|\bstd::(basic_)?[io]?fstream\b|\bbasic_filebuf\b|\bstd::filesystem\b"
        ),
        "opens or changes files",
    ),
    (re.compile(r"\b(getenv|secure_getenv|setenv|putenv|unsetenv)\s*\("), "reads or changes the environment"),
    (
        re.compile(
            r"\b_?Py[A-Z_]\w*|\bpybind11::detail\b|(?:\.|->|::)\s*(?:import|attr)\b|\bimport\s*\(|"
            r"\b(getattr|setattr|hasattr|delattr)\s*\(|\b(reinterpret_borrow|reinterpret_steal|gil_scoped_acquire)\b|"
            + _PY_OBJECTS
        ),
        "calls into the Python interpreter; bindings may only define functions (m.def with py::arg)",
    ),
    (
        re.compile(r"__attribute__\s*\(\s*\(\s*(constructor|destructor|init_priority|alias|weakref|ifunc|section)"),
        "runs code at load time or renames symbols",
    ),
    (
        re.compile(r"\)\s*(?:asm|__asm__|__asm)\s*\(\s*\"[A-Za-z_][\w@.$]*\"\s*\)"),
        "renames a symbol with an asm label",
    ),
    (
        re.compile(r"\.(init_array|preinit_array|fini_array|ctors|dtors|incbin)\b"),
        "places code or data in load-time sections",
    ),
    (
        re.compile(
            r"accessPolicyWindow|cudaLimitPersistingL2CacheSize|cudaDeviceSetLimit|cudaCtxResetPersistingL2Cache"
        ),
        "changes L2 cache persistence or device limits",
    ),
    (
        # cudaMemcpyDefault (the direction from the pointers) is allowed: between device tensors it is a
        # device copy, and the trace names every copy's direction.
        re.compile(r"cudaMemcpy\w*\s*\([^;]*DeviceToHost"),
        "copies device data to the host during forward",
    ),
    (
        re.compile(r"globalContext\s*\(\s*\)\s*\.\s*set\w*|\bsetAllowTF32\w*|\bsetFloat32MatmulPrecision\b"),
        "changes PyTorch's global math settings (TF32, precision); the reference runs with the defaults",
    ),
    (
        re.compile(r"\bcudaDeviceReset\b|\bcudaDeviceSetCacheConfig\b|\bcuCtxCreate\w*"),
        "changes device state or creates a CUDA context",
    ),
    (
        re.compile(r"\bcudaMallocManaged\b|\bcudaHostAlloc\b|\bcudaMallocHost\b"),
        "allocates managed or pinned memory",
    ),
    (
        re.compile(
            r"\bat::native::|\bat::_ops::|\bat::cuda::blas::|\bat::cpu::|\bc10::Dispatcher\b|\bfindSchema\w*\s*\(|"
            r"\bat::cuda::(?!(?:getCurrentCUDA\w*Handle|getCurrentCUDABlasLtHandle|getCurrentCUDAStream|"
            r"getDefaultCUDAStream|getStreamFromPool|getStreamFromExternal|getCurrentDeviceProperties|"
            r"getCUDABlasLtWorkspace|getCUDABlasLtWorkspaceSize|getChosenWorkspaceSize|"
            r"getDeviceProperties|warp_size|CUDAStream|CUDAEvent|OptionalCUDAGuard|CUDAGuard|CUDAStreamGuard|"
            r"OptionalCUDAStreamGuard|device_count|current_device|is_available)\b)\w+\s*\("
        ),
        "calls PyTorch's operator implementations directly; write the kernel",
    ),
    (
        library_rules.SOURCE_CALL,
        "uses cuBLAS or cuDNN for something other than a matrix product or a convolution (elementwise work, "
        "reductions, softmax, normalisation: write those kernels yourself)",
    ),
    (
        library_rules.REDUCED_PRECISION_MODES,
        "lowers the precision of an fp32 GEMM (fast fp16/bf16/tf32 modes) beyond what the reference uses",
    ),
    (
        re.compile(r"\bprofilerEnabled\b|\bhas(Global|ThreadLocal)?Callbacks\b|\bisRecordFunctionEnabled\b|"
                   r"\bcupti[A-Z]\w*|\blibkineto\b|\bautograd::profiler\b|\btorch::profiler\b"),
        "inspects the profiler (behaving differently while traced is phase detection)",
    ),
    # Issue 33 (what runs): a function found at run time is called without being imported, and code loaded
    # at run time is in no binary the judge read; the coverage gate attributes both (their kernels are
    # foreign), these name the common spellings early. Searched with string literals kept (a path or an
    # asm section name is a string).
    (
        re.compile(r"\b(dl_iterate_phdr|dladdr1?|dlinfo|_dl_find_object|getauxval)\s*\(|\b(_r_debug|_DYNAMIC|__ehdr_start|"
                   r"link_map|DT_GNU_HASH|DT_SYMTAB|DT_STRTAB|ElfW)\b|\bElf(32|64)_(Dyn|Sym|Phdr|Ehdr)\b|/proc/self/maps"),
        "looks up loaded libraries or their symbols at run time (what it finds runs without being imported)",
    ),
    (
        re.compile(r"\b__cuda(Register|Unregister|PushCallConfiguration|PopCallConfiguration)\w*|\b__fatbinwrap\w*|"
                   r"\.nv_fatbin|\bnvFatBinSegment\b|\b(cuModuleLoad|cuLibraryLoad|cudaLibraryLoad|cuLinkCreate|cuLinkAdd|"
                   r"nvrtc[A-Z]|nvJitLink[A-Z]|nvPTXCompiler[A-Z])\w*"),
        "loads or registers device code at run time (kernels no binary the judge read holds; their time is foreign)",
    ),
    (
        re.compile(r"\basm\b[^;]*?\b(syscall|sysenter)\b|\bint\s+\$?0x80\b"),
        "makes system calls directly (inline asm)",
    ),
]
# A stream the submission creates must be joined back to the caller's stream (cudaStreamWaitEvent on it).
STREAM_CREATE = re.compile(r"\bcudaStreamCreate\w*\s*\(|\bcuStreamCreate\w*\s*\(")
STREAM_JOIN = re.compile(r"\bcudaStreamWaitEvent\s*\(|\bcuStreamWaitEvent\s*\(|\.wait\s*\(")
CUBLAS_USE = re.compile(r"\bcublas\w*\s*\(")
CUDNN_USE = re.compile(r"\bcudnn\w*\s*\(")
# A driver function asked for by a literal name: refused at run time by the judge's gate unless allowed
# (driver_gate.py); named here too, with the line, for a reason before anything runs.
DRIVER_ENTRY_LITERAL = re.compile(r"\b(?:cudaGetDriverEntryPoint\w*|cuGetProcAddress\w*)\s*\(\s*\"(\w+)\"")
CPP_SUFFIXES = (".cu", ".cpp", ".h", ".cuh", ".hpp", ".inc", ".inl")


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


@dataclass(frozen=True)
class _Code:
    """Code of one file as (line, text) pairs, searchable as one string with a line for each match."""

    path: str
    lines: tuple[tuple[int, str], ...]

    @property
    def text(self) -> str:
        return "\n".join(code for _, code in self.lines)

    def line_of(self, offset: int, searched: str | None = None) -> int:
        """The file line of `offset` in `searched` (the text, or a copy with the same newlines)."""
        index = (self.text if searched is None else searched).count("\n", 0, offset)
        return self.lines[index][0] if index < len(self.lines) else 0


_RAW_STRING = re.compile(r'R"([^()\\\s]{0,16})\((.*?)\)\1"', re.S)
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.){1,8}\'')
# Rules about what strings say (symbol names in asm labels, section names) look at them; the rest do not,
# so an error message mentioning "PyTorch" or "open(" is not a call.
_STRING_RULES = ("renames a symbol", "load-time sections", "runs code at load time", "looks up loaded libraries",
                 "loads or registers device code", "makes system calls")


def _strip_strings(text: str) -> str:
    """String and character literals emptied (newlines kept, so offsets map to the same lines)."""
    text = _RAW_STRING.sub(lambda m: '""' + "\n" * m.group(0).count("\n"), text)
    return _STRING.sub('""', text)


def _file_rules(code: _Code, reference_ops: set[str] | None) -> list[Finding]:
    full = code.text
    text = _strip_strings(full)
    findings = []
    for pattern, message in CPP_RULES:
        searched = full if message.startswith(_STRING_RULES) else text
        match = pattern.search(searched)
        if match:
            line = code.line_of(match.start(), searched)
            findings.append(Finding(code.path, line, f"`{match.group(0).strip()}` {message}"))
    created = STREAM_CREATE.search(text)
    if created and not STREAM_JOIN.search(text):
        findings.append(Finding(code.path, code.line_of(created.start(), text),
                                "creates a CUDA stream it never joins to the caller's stream (cudaStreamWaitEvent); "
                                "use at::cuda::getStreamFromPool() and join it with events, or launch on the "
                                "current stream"))  # fmt: skip
    for asked in DRIVER_ENTRY_LITERAL.finditer(full):
        if not driver_gate.is_allowed(asked.group(1)):
            findings.append(Finding(code.path, code.line_of(asked.start(), full),
                                    f"asks for the driver function {asked.group(1)}, which the judge's gate refuses at "
                                    f"run time (allowed: {driver_gate.allowed_list()})"))  # fmt: skip
    if reference_ops is not None:
        if CUBLAS_USE.search(text) and not reference_ops & GEMM_OPS:
            findings.append(Finding(code.path, 0, "uses cuBLAS but the task has no matrix product"))
        if CUDNN_USE.search(text) and not (reference_ops & CONV_OPS):
            findings.append(Finding(code.path, 0, "uses cuDNN but the task has no convolution"))
    return findings


def _own_code(kernels_dir: Path, preprocess: bool) -> tuple[list[_Code], list[Finding]]:
    """The submission's code per file: preprocessed where the preprocessor ran, raw (comments removed)
    otherwise; plus findings about the raw text itself (line directives)."""
    raw: dict[str, str] = {}
    findings: list[Finding] = []
    for path in sorted(kernels_dir.rglob("*")):
        if path.is_file() and path.suffix in CPP_SUFFIXES:
            shown = f"kernels/{path.relative_to(kernels_dir)}"
            raw[shown] = path.read_text(errors="replace")
    from cuda_agent.judge.trusted.preprocess import line_directives, preprocess_submission

    for shown, text in raw.items():
        for line in line_directives(_strip_comments(text)):
            findings.append(Finding(shown, line, "#line directives and line markers are not allowed in kernels/"))
    units: dict[str, object] = {}
    if preprocess and raw:
        try:
            units = preprocess_submission(kernels_dir)  # type: ignore[assignment]
        except Exception:  # a kernels/ folder the build refuses, or no toolchain: raw text only
            units = {}
    codes: list[_Code] = []
    covered: set[str] = set()
    by_file: dict[str, list[tuple[int, str]]] = {}
    for name, unit in units.items():
        if not getattr(unit, "ok", False):
            continue
        covered.add(f"kernels/{name}")
        for file, line, code in unit.lines:  # type: ignore[attr-defined]
            by_file.setdefault(f"kernels/{file}", []).append((line, code))
            covered.add(f"kernels/{file}")
    codes += [_Code(path, tuple(lines)) for path, lines in sorted(by_file.items())]
    for shown, text in raw.items():
        if shown not in covered:  # not reached by a unit that preprocessed (or preprocessing unavailable)
            stripped = _strip_comments(text)
            codes.append(_Code(shown, tuple(enumerate(stripped.split("\n"), start=1))))
    return codes, findings


def check_kernel_sources(
    kernels_dir: Path, reference_ops: set[str] | None = None, preprocess: bool = True
) -> list[Finding]:
    """Findings for kernels/. `reference_ops` (ATen op names the reference ran) decides whether cuBLAS
    and cuDNN are allowed; None skips those rules (unknown task). `preprocess` matches the code as the
    compiler sees it (see preprocess.py); without it, the raw text with comments removed."""
    codes, findings = _own_code(Path(kernels_dir), preprocess)
    seen: set[tuple[str, str]] = set()
    for code in codes:
        for finding in _file_rules(code, reference_ops):
            key = (finding.path, finding.message)
            if key not in seen:
                seen.add(key)
                findings.append(finding)
    return findings


# --- what the linker binds ----------------------------------------------------------------------------
# Symbols a submission's host objects import, whatever the source spelled: the Python C API beyond what
# pybind11's function bindings use, processes, threads, files, environment, run-time loading, and library
# routines outside the task (device_code.imported_symbols gives the list).
_IMPORT_RULES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"^(_?PyRun_\w+|Py_CompileString\w*|PyEval_Eval\w+|PyEval_Get(Globals|Locals|Frame)\w*|"
                   r"PyImport_\w+|PySys_\w+|PyMarshal_\w+|PyCode_\w+|PyFunction_\w+|_?PyObject_(Call|Vectorcall)\w*|"
                   r"PyVectorcall_\w+|PyObject_(SetAttr|GenericSetAttr|DelAttr\w*)|PyFrame_Get(Globals|Locals|Builtins)|"
                   r"PyThreadState_GetFrame|PyEval_Set(Trace|Profile)\w*|Py_AddPendingCall|PyThread_start_new_thread)$"),
        "calls into the Python interpreter (runs, imports or patches Python objects)",
    ),
    (re.compile(r"^(fork|vfork|clone|clone3|execv\w*|execl\w*|execve\w*|system|popen|posix_spawnp?|syscall|"
                r"_Fork|__libc_fork|fexecve|execveat|pidfd_spawnp?)$"),
     "starts processes"),
    (re.compile(r"^(pthread_create|thrd_create|_ZNSt6thread\w*_M_start_thread\w*)$"), "starts threads"),
    (re.compile(r"^(dlopen|dlmopen|dlsym|dlvsym)$"), "loads libraries at run time"),
    (re.compile(r"^(socket|connect|getaddrinfo)$"), "opens network connections"),
    (re.compile(r"^cudaGetExportTable$"), "reaches the CUDA runtime's internal tables"),
    (re.compile(r"^(fopen|fopen64|freopen|open|open64|openat|openat64|creat|unlink|unlinkat|remove|rename|__open\w*|__openat\w*|"
                r"renameat2?|_ZNSt13basic_filebuf\w*|_ZNSt\d+basic_[io]?fstream\w*|_ZNSt10filesystem\w*)$"),
     "opens or changes files"),
    (re.compile(r"^(getenv|secure_getenv|setenv|putenv|unsetenv)$"), "reads or changes the environment"),
    (re.compile(r"^(cudaDeviceSetLimit|cudaCtxResetPersistingL2Cache|cudaDeviceReset|cudaMallocManaged|"
                r"cudaHostAlloc|cudaMallocHost)$"),
     "changes device state, limits or memory kinds"),
    # Issue 33: run-time symbol lookup (a PyTorch operator called without importing it), device code loaded
    # at run time (in no binary the judge read), and the profiler's state (behaving differently when traced).
    (re.compile(r"^(dl_iterate_phdr|dladdr1?|dlinfo|_dl_find_object|_r_debug|_DYNAMIC|__ehdr_start|getauxval|"
                r"__libc_stack_end|environ|__environ|_environ)$"),
     "looks up loaded libraries or their symbols at run time (what it finds runs without being imported)"),
    (re.compile(r"^(cuModuleLoad\w*|cuModuleGetFunction|cuLibraryLoad\w*|cuLibraryGet\w*|cudaLibraryLoad\w*|"
                r"cudaLibraryGet\w*|cuLink(Create|AddData|AddFile|Complete)\w*|nvrtc[A-Z]\w*|nvJitLink[A-Z]\w*|"
                r"nvPTXCompiler[A-Z]\w*)$"),
     "loads device code at run time (kernels no binary the judge read holds; their time is foreign)"),
    (re.compile(r"^.*(profiler|Profiler|kineto|Kineto|cupti|RecordFunction|hasCallbacks|hasGlobalCallbacks|"
                r"hasThreadLocalCallbacks|isRecordFunctionEnabled|StepCallbacks)"),
     "inspects the profiler (behaving differently while traced is phase detection)"),
    # ATen's GEMM wrappers launch cuBLAS kernels that the coverage gate credits to a submission linking
    # cuBLAS (02_linked_cublas_aten_mm_cpp): ATen's work, not the submission's.
    (re.compile(r"^_ZN2at4cuda4blas"), "calls PyTorch's cuBLAS wrappers (at::cuda::blas): call cuBLAS yourself"),
]
# Registering device code by hand: nvcc's objects of .cu files do it for their own kernels; any other
# object that does registers code the judge's build did not make.
_HAND_REGISTRATION = re.compile(r"^__cuda(RegisterFatBinary|RegisterFunction|RegisterVar|RegisterFatBinaryEnd)\w*$")


def check_imports(imports: dict[str, set[str]], reference_ops: set[str] | None = None) -> list[Finding]:
    """Findings for what each submission object (by its source under kernels/) imports from the linker, and
    for what the linked extension still imports of the names the judge's driver gate defines (build.py's
    `LINKED_MODULE` entry). Symbols are judged by their base name (`name@version` is `name`)."""
    from cuda_agent.judge.trusted.aten_calls import forbidden_operators

    findings = []
    for source, versioned in sorted(imports.items()):
        symbols = {s.split("@", 1)[0] for s in versioned}
        if source == driver_gate.LINKED_MODULE:
            if bypassed := sorted(s for s in symbols if s in driver_gate.GATED):
                findings.append(Finding(source, 0, f"the linked extension imports {', '.join(bypassed)} from the CUDA "
                                        "runtime: a call got past the judge's driver gate (call these functions "
                                        "by their plain names)"))  # fmt: skip
            continue
        if driver := sorted(s for s in symbols if driver_gate.is_driver_function(s) and not driver_gate.is_allowed(s)):
            findings.append(Finding(source, 0, f"the built object calls the CUDA driver API ({', '.join(driver[:4])}): "
                                    "contexts, streams and memory the judge does not see; allowed driver functions: "
                                    f"{driver_gate.allowed_list()}"))  # fmt: skip
        if routines := sorted(s for s in symbols if library_rules.refused_routine(s)):
            what = library_rules.refused_routine(routines[0])
            findings.append(Finding(source, 0, f"the built object calls {', '.join(routines[:4])} ({what}): cuBLAS is "
                                    "allowed for matrix products and cuDNN for convolutions; write the rest as kernels"))  # fmt: skip
        for pattern, message in _IMPORT_RULES:
            hits = sorted(s for s in symbols if pattern.match(s))
            if hits:
                findings.append(Finding(source, 0, f"the built object imports {', '.join(hits[:4])}: it {message}"))
        registered = sorted(s for s in symbols if _HAND_REGISTRATION.match(s))
        if registered and not source.endswith(".cu"):
            findings.append(Finding(source, 0, f"the built object imports {', '.join(registered[:3])}: it registers "
                                    "device code by hand (kernels no binary the judge read holds)"))  # fmt: skip
        if ops := forbidden_operators(symbols):
            named = ", ".join(op if op == "the dispatcher" else f"aten.{op}" for op in ops[:4])
            findings.append(Finding(source, 0, f"the built object calls PyTorch operators from C++ ({named}): "
                                    "only allocation and views; implement the work in kernels/"))  # fmt: skip
        if reference_ops is not None:
            if any(s.startswith("cublas") for s in symbols) and not (reference_ops & GEMM_OPS):
                findings.append(Finding(source, 0, "links cuBLAS but the task has no matrix product"))
            if any(s.startswith("cudnn") for s in symbols) and not (reference_ops & CONV_OPS):
                findings.append(Finding(source, 0, "links cuDNN but the task has no convolution"))
    return findings


def describe(findings: list[Finding], limit: int = 5) -> str:
    shown = "; ".join(str(f) for f in findings[:limit])
    more = f" (and {len(findings) - limit} more)" if len(findings) > limit else ""
    return shown + more
