"""Where the compilers, headers and libraries for a `cuda_extension` build are, and which flags to use.

Everything here is discovered from the installed torch and CUDA toolkit, never from the submission.
The NVIDIA pip wheels that torch depends on (`nvidia/cu13`, `nvidia/cudnn`) carry cuBLAS and cuDNN
headers and libraries when the system toolkit lacks them, so both places are searched.

Trust boundary: runs in the parent; reads only the installed torch and CUDA, never the submission, so the
flags and include paths of every build are the judge's own.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Libraries a submission may use: the CUDA runtime, cuBLAS (GEMM) and cuDNN (convolution).
LINK_LIBRARIES = ("cudart", "cublas", "cublasLt", "cudnn")
TORCH_LIBRARIES = ("c10", "c10_cuda", "torch", "torch_cpu", "torch_cuda", "torch_python")


class ToolchainError(RuntimeError):
    """The machine lacks something needed to build extensions (nvcc, a C++ compiler, torch)."""


@dataclass(frozen=True)
class Toolchain:
    nvcc: str
    cxx: str
    cuda_home: Path
    include_dirs: tuple[str, ...]
    library_files: tuple[str, ...]  # full paths of the shared libraries to link
    library_dirs: tuple[str, ...]
    cxx_standard: str
    cxx11_abi: int
    torch_version: str
    nvcc_version: str
    cxx_version: str
    # Extra flags for the link (e.g. -fuse-ld=gold): `fast_linker`.
    link_flags: tuple[str, ...] = ()

    def fingerprint(self) -> str:
        """What a compiled object depends on besides its sources and flags."""
        return "|".join(
            (self.nvcc_version, self.cxx_version, self.torch_version, self.cxx_standard, str(self.cxx11_abi))
        )


def _find_cuda_home() -> Path:
    for candidate in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if candidate and (Path(candidate) / "bin" / "nvcc").exists():
            return Path(candidate)
    nvcc = shutil.which("nvcc")
    if nvcc:
        resolved = Path(nvcc).resolve()
        # /usr/local/bin/nvcc may be a wrapper script; look for the real toolkit next to it or in /usr/local.
        if (resolved.parent.parent / "include" / "cuda_runtime.h").exists():
            return resolved.parent.parent
    for root in sorted(Path("/usr/local").glob("cuda*"), reverse=True):
        if (root / "bin" / "nvcc").exists():
            return root
    raise ToolchainError("nvcc not found: install the CUDA toolkit or set CUDA_HOME")


def _version(command: list[str]) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = [line for line in out.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "unknown"


def _nvidia_wheel_dirs() -> tuple[list[Path], list[Path]]:
    """Include and lib folders of the nvidia-* wheels installed beside torch (in the site folder that holds
    torch, which a virtual environment reaching torch through a .pth file does not have as its own)."""
    includes: list[Path] = []
    libs: list[Path] = []
    sites = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    with contextlib.suppress(ImportError):
        import torch

        sites.append(str(Path(torch.__file__).resolve().parents[1]))
    for site in dict.fromkeys(str(Path(s).resolve()) for s in sites):
        nvidia = Path(site) / "nvidia"
        if not nvidia.is_dir():
            continue
        for package in sorted(nvidia.iterdir()):
            if (package / "include").is_dir():
                includes.append(package / "include")
            if (package / "lib").is_dir():
                libs.append(package / "lib")
    return includes, libs


def _find_library(name: str, dirs: list[Path]) -> str | None:
    for directory in dirs:
        exact = directory / f"lib{name}.so"
        if exact.exists():
            return str(exact)
        versioned = sorted(directory.glob(f"lib{name}.so.*"), key=lambda p: len(p.name))
        if versioned:
            return str(versioned[0])
    return None


@functools.cache
def discover() -> Toolchain:
    """Find nvcc, the host compiler, torch's headers and libraries. Cached per process."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is a hard dependency
        raise ToolchainError(f"torch is not importable: {exc}") from exc

    cuda_home = _find_cuda_home()
    nvcc = str(cuda_home / "bin" / "nvcc")
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not cxx:
        raise ToolchainError("no C++ compiler found (install g++ or set CXX)")

    wheel_includes, wheel_libs = _nvidia_wheel_dirs()
    torch_root = Path(torch.__file__).parent
    include_dirs = [
        str(torch_root / "include"),
        str(torch_root / "include" / "torch" / "csrc" / "api" / "include"),
        sysconfig.get_paths()["include"],
        str(cuda_home / "include"),
        *map(str, wheel_includes),
    ]
    lib_search = [cuda_home / "lib64", cuda_home / "lib", *wheel_libs]
    library_files = []
    for name in LINK_LIBRARIES:
        found = _find_library(name, lib_search)
        if found:
            library_files.append(found)
        elif name in ("cudart", "cublas"):
            raise ToolchainError(f"lib{name}.so not found in {', '.join(map(str, lib_search))}")
    torch_lib = torch_root / "lib"
    for name in TORCH_LIBRARIES:
        found = _find_library(name, [torch_lib])
        if found:
            library_files.append(found)
    library_dirs = sorted({str(Path(f).parent) for f in library_files})

    major, minor = (int(x) for x in re.findall(r"\d+", torch.__version__)[:2])
    cxx_standard = "c++20" if (major, minor) >= (2, 10) else "c++17"
    return Toolchain(
        nvcc=nvcc,
        cxx=cxx,
        cuda_home=cuda_home,
        include_dirs=tuple(dict.fromkeys(include_dirs)),
        library_files=tuple(library_files),
        library_dirs=tuple(library_dirs),
        cxx_standard=cxx_standard,
        cxx11_abi=int(torch._C._GLIBCXX_USE_CXX11_ABI),
        torch_version=torch.__version__,
        nvcc_version=_version([nvcc, "--version"]),
        cxx_version=_first_line([cxx, "--version"]),
        link_flags=fast_linker(cxx, tuple(library_files)),
    )


def fast_linker(cxx: str, library_files: tuple[str, ...] | list[str] = ()) -> tuple[str, ...]:
    """The flags that make `cxx` link with gold where it can: linking a submission against torch's
    libraries is reading their symbol tables (libtorch_cpu alone is ~500 MB), which gold does in 0.2 s
    where GNU ld takes 0.5-0.65 s (this 2-core host, row_softmax). CUDA_AGENT_LINKER=default keeps the
    compiler's own linker, =gold insists on gold; otherwise gold when it links a small C++ shared object
    against `library_files` here. Asking `-Wl,--version` is not enough: on the H200 host gold runs but
    cannot open the libstdc++.so that the compiler's own search path names (GNU ld resolves it), so
    every submission failed to link until the probe became a real link."""
    choice = os.environ.get("CUDA_AGENT_LINKER", "").strip().lower()
    if choice in ("default", "bfd", "ld"):
        return ()
    flags = ("-fuse-ld=gold",)
    works, why = _links_with(cxx, flags, tuple(library_files))
    if choice == "gold" and not works:
        raise ToolchainError(
            f"CUDA_AGENT_LINKER=gold but {cxx} -fuse-ld=gold cannot link a shared object here "
            f"(install binutils-gold, or set CUDA_AGENT_LINKER=default): {why}"
        )
    return flags if works else ()


def _links_with(cxx: str, flags: tuple[str, ...], library_files: tuple[str, ...]) -> tuple[bool, str]:
    """Whether `cxx flags` compiles and links a shared object that needs libstdc++ (and the given
    libraries), with the compiler's message when not."""
    source = "#include <string>\nstd::string cuda_agent_probe(int n) { return std::to_string(n); }\n"
    with tempfile.TemporaryDirectory(prefix="cuda-agent-linker-") as tmp:
        src = Path(tmp) / "probe.cpp"
        src.write_text(source)
        command = [cxx, *flags, "-shared", "-fPIC", str(src), "-o", str(Path(tmp) / "probe.so"), *library_files]
        try:
            probe = subprocess.run(command, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, str(exc)
        if probe.returncode != 0:
            lines = (probe.stderr or probe.stdout).strip().splitlines()
            return False, lines[0] if lines else f"exit code {probe.returncode}"
        return True, ""


def _first_line(command: list[str]) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.strip().splitlines()[0] if out.strip() else "unknown"


def default_arch() -> str:
    """The CUDA architecture to build for: `CUDA_AGENT_ARCH`, else the visible GPU, else Hopper (9.0)."""
    explicit = os.environ.get("CUDA_AGENT_ARCH")
    if explicit:
        return explicit
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"{major}.{minor}"
    except Exception:  # pragma: no cover - a broken driver must not stop a CPU build
        pass
    return "9.0"


def gencode_flags(arch: str) -> list[str]:
    """nvcc flags for one architecture like "9.0". Hopper and newer get the arch-specific target
    (sm_90a) so that wgmma and the tensor memory accelerator are available to kernels."""
    match = re.fullmatch(r"(\d+)\.(\d+)(a?)", arch.strip())
    if not match:
        raise ToolchainError(f"bad CUDA architecture {arch!r}; expected something like 9.0")
    major, minor, suffix = match.groups()
    number = f"{major}{minor}"
    if int(major) >= 9 and not suffix:
        suffix = "a"
    return ["-gencode", f"arch=compute_{number}{suffix},code=sm_{number}{suffix}"]
