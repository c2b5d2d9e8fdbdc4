"""The judge's compiler and linker commands for a submission's units, and the flags every unit shares.

One place for the flags, because three things must agree on them exactly: the `.cpp` units, the
precompiled header they `-include` (g++ takes a PCH only when the flags match, pch.py), and the object
cache's keys (build.py). The reasons for each flag are beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from cuda_agent.judge.trusted.toolchain import Toolchain, gencode_flags

if TYPE_CHECKING:
    from cuda_agent.judge.trusted.build import BuildConfig

MODULE_NAME = "cuda_extension"

# NVTX ranges (nvtx3 headers, and CUB's and thrust's own ranges) compiled to no-ops whose header code loads
# no injection library: without them every object that includes NVTX imports dlopen, dlsym and getenv,
# which the import rules refuse (nothing a judged run needs comes through an NVTX tool).
NVTX_DEFINES = ("-DNVTX_DISABLE", "-DNVTX_SUPPORT_DYNAMIC_INJECTION_LIBRARY=0")


def common_defines(tc: Toolchain) -> list[str]:
    return [
        f"-DTORCH_EXTENSION_NAME={MODULE_NAME}",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        f"-D_GLIBCXX_USE_CXX11_ABI={tc.cxx11_abi}",
        *NVTX_DEFINES,
        *[f"-I{d}" for d in tc.include_dirs],
    ]


# nvcc's own words when a .cu needs extended lambdas: the unit is compiled again with the flag.
EXTENDED_LAMBDA_FLAG = "--extended-lambda"


def compile_command(
    source: Path, obj: Path, tc: Toolchain, config: BuildConfig, pch: Path | None = None,
    extended_lambda: bool = False,
) -> list[str]:  # fmt: skip
    """The compiler command for one source; `pch` is the judge's PCH header to `-include` (.cpp only).

    `extended_lambda` (.cu only) adds nvcc's --extended-lambda, which only sources with `__device__`
    lambdas in host code need and which costs every other unit 0.6 of its 1.9 s (cudafe++ and the host
    pass, row_softmax.cu on this 2-core host): a build passes it only to a unit whose first compile failed
    asking for it (`_compile_and_link`), as torch's cpp_extension leaves it to the user."""
    if source.suffix == ".cu":
        return [
            tc.nvcc, "-c", str(source), "-o", str(obj),
            config.optimization, f"-std={tc.cxx_standard}", *gencode_flags(config.arch),
            *(["--use_fast_math"] if config.fast_math else []),
            "-Xcompiler", "-fPIC", "--expt-relaxed-constexpr", *([EXTENDED_LAMBDA_FLAG] if extended_lambda else []),
            "--no-compress",  # cubins stored as plain ELF: the judge reads the kernels from the binary
            # torch's own defaults, so that sources written for cpp_extension.load compile the same way
            "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
            "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
            f"-ccbin={tc.cxx}", *common_defines(tc),
        ]  # fmt: skip
    return [
        tc.cxx, "-c", str(source), "-o", str(obj), *cxx_flags(tc, config),
        "-w" if source.name == "binding.cpp" else "-Wno-unused-function",
        *(["-include", str(pch), "-Winvalid-pch"] if pch else []),
    ]  # fmt: skip


def cxx_flags(tc: Toolchain, config: BuildConfig) -> list[str]:
    """g++ flags shared by .cpp units and the PCH: g++ takes a PCH only when they match."""
    return [config.host_optimization, f"-std={tc.cxx_standard}", "-fPIC", "-fvisibility=hidden",
            *common_defines(tc)]  # fmt: skip


def link_command(objects: list[Path], output: Path, tc: Toolchain) -> list[str]:
    rpaths = [f"-Wl,-rpath,{d}" for d in tc.library_dirs]
    return [tc.cxx, "-shared", *tc.link_flags, "-o", str(output), *map(str, objects), *tc.library_files, *rpaths]

