"""Trusted side: the rule tables of the static checks of kernels/ (static_source.py applies them): each
pattern with the reason a finding gives.

Rules match the submission's own code *after preprocessing* (preprocess.py: line splices joined, macros
and token pastes expanded, comments gone), so the spelling of a call does not matter; what the linker
binds is checked too (static_imports.py), which no spelling changes.
"""

from __future__ import annotations

import re

from cuda_agent.judge.trusted import library_rules

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
# Rules about what strings say (symbol names in asm labels, section names) look at them; the rest do not,
# so an error message mentioning "PyTorch" or "open(" is not a call.
STRING_RULES = ("renames a symbol", "load-time sections", "runs code at load time", "looks up loaded libraries",
                "loads or registers device code", "makes system calls")
