"""The CUDA driver entry points a submission may reach, and the judge's own unit that holds them to it.

Kernel writers reach a few driver functions without linking libcuda: TMA tensor maps
(`cuTensorMapEncodeTiled`), occupancy queries, function attributes, `cuLaunchKernelEx` and cooperative
launches. The standard way is `cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, ...)`, a
name handed over at run time, so a rule on the source text (or on the symbols the binary imports) cannot
tell a tensor map from `cuCtxCreate`. What can is the call itself: the judge links its own unit,
`judge_driver_gate.cpp` (`gate_source()`), into every extension. It defines `cudaGetDriverEntryPoint*`
and `cudaSetDevice` with hidden visibility, so every call the submission's objects make to them binds,
at link time, to the judge's definitions rather than libcudart's (a definition in an object of the link
wins over a shared library's; hidden, it is bound inside the extension and no loaded library can
interpose it). The gate hands the request on to libcudart only for names on `ALLOWED`, whether the name
was a literal or built at run time, and refuses the rest with `cudaErrorNotPermitted` and a line on
stderr. `cudaSetDevice` goes through only for the device already current (CUB's and thrust's device guards
call it that way): a context on another GPU is one the judge neither times nor traces.

Refused, because nothing the judge observes would see what they make: contexts (`cuCtxCreate`,
`cuCtxSetCurrent`, primary contexts), streams outside the runtime's (`cuStreamCreate`), memory
(`cuMemAlloc`, `cuMemCreate`/`cuMemMap`, managed and host memory), code loaded at run time
(`cuModuleLoad*`, `cuLibraryLoad*`, whose kernels are not in the built binary), limits and L2 persistence
(`cuCtxSetLimit`, `cuCtxResetPersistingL2Cache`), host callbacks, and `cuGetProcAddress` itself.

The binary side (static_checks.check_imports): a submission object may import the gated runtime names (they
bind to the gate), and driver functions directly only from `ALLOWED`; the linked extension must import
none of the gated names (`GATED`), or something bypassed the gate (a versioned reference, a new variant)
and it is refused. Residual: a submission that finds libcudart's function by address arithmetic from
another runtime function's address is not stopped here; the contexts, streams and memory it could then
make are what the dynamic lines (device-wide synchronisation, NVML memory per process, coverage) are for.

Trust boundary: parent (the table, the source) and the compiler; the gate runs in the candidate's process
but is the judge's code, linked from a private object (build.py), and what it refuses never reaches
libcudart.
"""

from __future__ import annotations

import re

UNIT_NAME = "judge_driver_gate.cpp"
# The key of BuildResult.imports under which build.py lists what the linked extension itself still imports
# of `GATED` and of the driver (nothing, unless a call got past the gate).
LINKED_MODULE = "cuda_extension.so (linked)"

# Driver functions a kernel writer may ask for, each with why it is needed. A trailing `*` is a prefix.
ALLOWED: dict[str, str] = {
    "cuTensorMapEncodeTiled": "TMA tensor maps (cp.async.bulk.tensor)",
    "cuTensorMapEncodeIm2col": "TMA tensor maps for convolutions",
    "cuTensorMapEncodeIm2colWide": "TMA tensor maps for convolutions",
    "cuTensorMapReplaceAddress": "re-pointing a tensor map at this call's tensor",
    "cuOccupancy*": "occupancy queries",
    "cuFuncGetAttribute": "function attributes (registers, shared memory)",
    "cuFuncSetAttribute": "opting in to more dynamic shared memory, cluster sizes",
    "cuFuncSetCacheConfig": "the L1/shared-memory split of one function",
    "cuFuncGetName": "function names for messages",
    "cuKernelGetAttribute": "kernel attributes",
    "cuKernelSetAttribute": "opting in to more dynamic shared memory",
    "cuKernelGetFunction": "the function of a kernel handle (cudaGetKernel)",
    "cuLaunchKernel": "launching one of the submission's own kernels",
    "cuLaunchKernelEx": "launches with attributes (clusters, programmatic dependent launch)",
    "cuLaunchCooperativeKernel": "cooperative launches (grid-wide synchronisation)",
    "cuGetErrorString": "error messages",
    "cuGetErrorName": "error messages",
    "cuDriverGetVersion": "the driver's version",
    "cuDeviceGet": "the current device's handle",
    "cuDeviceGetAttribute": "device attributes",
    "cuCtxGetCurrent": "the current context (read only)",
    "cuCtxGetDevice": "the current context's device (read only)",
    "cuPointerGetAttribute": "pointer attributes (read only)",
    "cuPointerGetAttributes": "pointer attributes (read only)",
}

# The runtime functions the gate defines: calls from kernels/ bind to the gate, never to libcudart. The
# `_ptsz` variants are what the same calls become under per-thread default streams.
GATED = (
    "cudaGetDriverEntryPoint",
    "cudaGetDriverEntryPoint_ptsz",
    "cudaGetDriverEntryPointByVersion",
    "cudaGetDriverEntryPointByVersion_ptsz",
    "cudaSetDevice",
)

_DRIVER_NAME = re.compile(r"^cu[A-Z]\w*$")
# Versioned exports of the driver (cuMemAlloc_v2, cuLaunchKernel_ptsz) are the same function.
_VARIANT = re.compile(r"(?:_v\d+)?(?:_ptsz|_ptds)?$")


def is_allowed(name: str) -> bool:
    """A driver function on the allow-list (by base name: `_v2`, `_ptsz` variants are the same function)."""
    base = _VARIANT.sub("", name)
    return any(base.startswith(p[:-1]) if p.endswith("*") else base == p for p in ALLOWED)


def is_driver_function(symbol: str) -> bool:
    """`cuTensorMapEncodeTiled`, `cuCtxCreate_v2`: a CUDA driver API name (not cudnn*, cublas*, cuda*)."""
    return bool(_DRIVER_NAME.match(symbol)) and not symbol.startswith(("cuda", "cublas", "cudnn", "cufft", "curand",
                                                                       "cusparse", "cusolver"))  # fmt: skip


def allowed_list() -> str:
    """The allow-list as one line, for reasons and SKILL.md."""
    return ", ".join(ALLOWED)


def gate_source() -> str:
    """The judge's unit linked into every extension (see the module docstring). Its text is a pure
    function of `ALLOWED`, so its object is cached by content like any other."""
    exact = [n for n in ALLOWED if not n.endswith("*")]
    prefixes = [n[:-1] for n in ALLOWED if n.endswith("*")]
    listed = "\n".join(f'    "{n}",' for n in exact)
    prefixed = "\n".join(f'    "{n}",' for n in prefixes)
    return _GATE_TEMPLATE.replace("@EXACT@", listed).replace("@PREFIXES@", prefixed).replace("@ALLOWED@", allowed_list())


_GATE_TEMPLATE = r"""// judge_driver_gate.cpp -- the judge's own unit, linked into every cuda_extension
// (cuda_agent.judge.trusted.driver_gate). Calls from kernels/ to cudaGetDriverEntryPoint* and cudaSetDevice
// bind here: the definitions are hidden, so the link binds them inside the extension and nothing loaded
// later can interpose them. Requests go on to libcudart only for allowed driver functions.
// No CUDA header is included: these definitions must not meet libcudart's default-visibility declarations.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

extern "C" int cudaGetDevice(int* device);
extern "C" int cudaGetLastError(void);

namespace {

constexpr int kNotPermitted = 800;       // cudaErrorNotPermitted
constexpr int kSymbolNotFound = 1;       // cudaDriverEntryPointSymbolNotFound
constexpr int kRuntimeUnavailable = 35;  // cudaErrorInsufficientDriver: libcudart's function not found

const char* const kAllowed[] = {
@EXACT@
};
const char* const kAllowedPrefixes[] = {
@PREFIXES@
};

// The name without a _vN / _ptsz / _ptds suffix (the driver's variants of one function).
bool same_function(const char* name, const char* allowed, bool prefix) {
    const size_t n = std::strlen(allowed);
    if (std::strncmp(name, allowed, n) != 0) return false;
    if (prefix) return true;
    const char* rest = name + n;
    if (rest[0] == '_' && rest[1] == 'v') {
        rest += 2;
        if (*rest < '0' || *rest > '9') return false;
        while (*rest >= '0' && *rest <= '9') ++rest;
    }
    return *rest == '\0' || std::strcmp(rest, "_ptsz") == 0 || std::strcmp(rest, "_ptds") == 0;
}

bool allowed(const char* name) {
    if (name == nullptr) return false;
    for (const char* a : kAllowed)
        if (same_function(name, a, false)) return true;
    for (const char* p : kAllowedPrefixes)
        if (same_function(name, p, true)) return true;
    return false;
}

// libcudart's own definition of `name`: the library is the one that holds cudaGetLastError, which this
// unit imports like any other runtime function.
void* runtime_function(const char* name) {
    static void* handle = [] {
        Dl_info info{};
        void* found = nullptr;
        if (dladdr(reinterpret_cast<void*>(&cudaGetLastError), &info) != 0 && info.dli_fname != nullptr)
            found = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        return found;
    }();
    return handle != nullptr ? dlsym(handle, name) : nullptr;
}

int refuse(const char* call, const char* symbol, void** fn, int* status) {
    if (fn != nullptr) *fn = nullptr;
    if (status != nullptr) *status = kSymbolNotFound;
    std::fprintf(stderr,
                 "cuda-agent judge: %s(\"%s\") refused: not one of the driver functions a submission may use "
                 "(@ALLOWED@); see SKILL.md, \"Libraries and build\"\n",
                 call, symbol != nullptr ? symbol : "(null)");
    return kNotPermitted;
}

using EntryPoint = int (*)(const char*, void**, unsigned long long, int*);
using EntryPointByVersion = int (*)(const char*, void**, unsigned int, unsigned long long, int*);

int entry_point(const char* call, const char* symbol, void** fn, unsigned long long flags, int* status) {
    if (!allowed(symbol)) return refuse(call, symbol, fn, status);
    auto real = reinterpret_cast<EntryPoint>(runtime_function(call));
    return real != nullptr ? real(symbol, fn, flags, status) : kRuntimeUnavailable;
}

int entry_point_by_version(const char* call, const char* symbol, void** fn, unsigned int version,
                           unsigned long long flags, int* status) {
    if (!allowed(symbol)) return refuse(call, symbol, fn, status);
    auto real = reinterpret_cast<EntryPointByVersion>(runtime_function(call));
    return real != nullptr ? real(symbol, fn, version, flags, status) : kRuntimeUnavailable;
}

}  // namespace

#define CUDA_AGENT_GATED extern "C" __attribute__((visibility("hidden")))

CUDA_AGENT_GATED int cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags, int* status) {
    return entry_point("cudaGetDriverEntryPoint", symbol, fn, flags, status);
}

CUDA_AGENT_GATED int cudaGetDriverEntryPoint_ptsz(const char* symbol, void** fn, unsigned long long flags,
                                                  int* status) {
    return entry_point("cudaGetDriverEntryPoint_ptsz", symbol, fn, flags, status);
}

CUDA_AGENT_GATED int cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int version,
                                                      unsigned long long flags, int* status) {
    return entry_point_by_version("cudaGetDriverEntryPointByVersion", symbol, fn, version, flags, status);
}

CUDA_AGENT_GATED int cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** fn, unsigned int version,
                                                           unsigned long long flags, int* status) {
    return entry_point_by_version("cudaGetDriverEntryPointByVersion_ptsz", symbol, fn, version, flags, status);
}

// The device already current only: CUB's and thrust's device guards call it that way.
CUDA_AGENT_GATED int cudaSetDevice(int device) {
    int current = -1;
    if (cudaGetDevice(&current) != 0 || device != current) {
        std::fprintf(stderr,
                     "cuda-agent judge: cudaSetDevice(%d) refused: work stays on the device of the call's "
                     "tensors (device %d)\n",
                     device, current);
        return kNotPermitted;
    }
    using SetDevice = int (*)(int);
    auto real = reinterpret_cast<SetDevice>(runtime_function("cudaSetDevice"));
    return real != nullptr ? real(device) : kRuntimeUnavailable;
}
"""
