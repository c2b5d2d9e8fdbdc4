"""Trusted side: the rule tables of model_new.py's static checks (static_python.py applies them), each
name with the reason a finding gives.
"""

from __future__ import annotations

# Modules model_new.py may import. None reaches PyTorch compute that `import torch` does not already reach
# (torch.nn.init is `nn.init`; its in-place fills run ops on tensors, which the op gate refuses when they run
# during forward and which are the task's own initialisation in __init__); operator and itertools add no
# new capability beyond what FORBIDDEN_NAMES refuses of them (attrgetter/methodcaller look attributes up by
# string like getattr; setitem/delitem and the in-place functions mutate state).
ALLOWED_IMPORTS = frozenset(
    {"torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.parameter", "cuda_extension",
     "math", "typing", "__future__", "collections", "dataclasses", "functools", "numbers", "enum", "operator",
     "itertools"}
)  # fmt: skip
ALLOWED_IMPORTS_TEXT = ", ".join(sorted(ALLOWED_IMPORTS))

# The name the judge loads the submission's own extension as (binding.cpp's PYBIND11_MODULE): its private
# attributes are the submission's own functions (`cuda_extension._col_scale_forward`), not PyTorch internals.
EXTENSION_MODULE = "cuda_extension"

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
    # operator's functions that are getattr, or mutations, by other names (operator is an allowed import)
    "attrgetter": "looks attributes up by string (operator.attrgetter is a getattr)",
    "methodcaller": "calls methods by string name (operator.methodcaller is a getattr)",
    **{name: "mutates its argument in place (a mutation the state checks cannot read)" for name in (
        "setitem", "delitem", "iadd", "iand", "iconcat", "ifloordiv", "ilshift", "imatmul", "imod", "imul",
        "ior", "ipow", "irshift", "isub", "itruediv", "ixor")},
}


# Methods whose call on state reached from forward (self, a module-level name) mutates it.
MUTATING_METHODS = frozenset(
    {"append", "extend", "insert", "update", "setdefault", "add", "pop", "popitem", "clear", "remove",
     "discard", "__setitem__", "copy_", "fill_", "zero_"}
)  # fmt: skip


# Builtins checked as bare names too (other forbidden names only as attributes of modules or private).
BUILTIN_NAMES = frozenset(
    {"eval", "exec", "compile", "open", "setattr", "delattr", "getattr", "globals", "vars", "__import__",
     "locals", "breakpoint"}
)  # fmt: skip
