"""Trusted side: the static checks of what the linker binds: the symbols each submission object imports,
whatever the source spelled, against a table of patterns with their reasons; driver functions past the
judge's gate, library routines outside a product or convolution, PyTorch operators called from C++.
"""

from __future__ import annotations

import re

from cuda_agent.judge.trusted import driver_gate, library_rules
from cuda_agent.judge.trusted.library_rules import CONV_OPS, GEMM_OPS
from cuda_agent.judge.trusted.static_finding import Finding

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
