"""Which kernels PyTorch and the allowed libraries contain, read from their binaries and cached on disk.

A kernel's name is not its identity: a submission can name its kernel like cuBLAS's, and PyTorch's own
kernels (flash attention, cutlass GEMMs) carry names that matched the old name patterns for library
kernels. So the coverage gate attributes a traced kernel by the binary that holds its code: the
submission's extension (device_code.py), cuBLAS/cuBLASLt, cuDNN, or PyTorch's own CUDA libraries. The
lists here are the exact entry functions of each library's fat binary (fatbin.py), for the files the
candidate's process loads: the ones torch's wheel ships (`torch/lib/*.so` with device code, and
`nvidia/*/lib/libcublas*`, `libcudnn*` beside it in site-packages).

Cost (torch 2.14 + CUDA 13 wheel, this judge's 2-core CPU): listing libtorch_cuda.so takes ~4.5 s,
cuBLAS + cuBLASLt ~2.7 s, all of cuDNN ~6 s; the lists are cached on disk, one record per library file
keyed by its identity (real path, size, mtime, inode), and kept in memory for the process. A library is
only listed when a judgment needs it (cuBLAS only for a submission that calls cuBLAS on a task with a
matrix product, cuDNN likewise for convolutions).

Trust boundary: runs in the parent. A cached list is a fact the reward depends on (a forged record could
list PyTorch's flash-attention kernels as cuBLAS's), and the cache folder may be writable by the
candidate, so every record carries an HMAC under the judge's machine key (authkey.py), as baselines do,
and one that does not verify is listed again. Where candidates run as the judge's own user there is no key
they cannot read on disk: the lists are then kept in this process's memory only (`persistent=False`),
and each new judge process lists the libraries it needs once.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import mmap
import os
import re
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.judge.trusted.authkey import sign, verify
from cuda_agent.judge.trusted.build import cache_root
from cuda_agent.judge.trusted.device_code import demangle, normalise
from cuda_agent.judge.trusted.fatbin import library_entries
from cuda_agent.judge.trusted.name_templates import NameTemplate

# The allowed libraries by the name the rules use, and the files that make them up.
LIBRARY_FILES: dict[str, re.Pattern[str]] = {
    "cublas": re.compile(r"^libcublas(Lt)?\.so(\.\d+)*$"),
    "cudnn": re.compile(r"^libcudnn(_\w+)?\.so(\.\d+)*$"),
}
TORCH = "torch"
MAX_RECORD_BYTES = 64 << 20
# Kernels a library assembles at run time, so no fat binary holds them, named from printf templates kept in
# the library's own read-only data: (library, the templates' literal start, why). The templates are read from
# the binary (`runtime_templates`), never written here, so a name the library could not make stays foreign.
RUNTIME_NAMED: tuple[tuple[str, bytes, str], ...] = (
    ("cublas", b"nvjet_sm",
     "cuBLASLt on Hopper and later builds its nvjet GEMM kernels at run time (the H200 ran an honest fp16 "
     "cublasGemmEx as nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT, a name in no binary on disk)"),
)
# Kernels a library loads at run time from modules embedded in its read-only data (not its fat binary), so
# only their host-side names are in the file: (library, the mangled names' pattern, why). cuBLAS's SIMT sgemm
# kernels are such (the H200 ran an honest fp32 cuBLAS GEMM for nn.Bilinear as
# cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>, in no fat binary: 00_honest_bilinear_cublas).
# Read from the library's own file, so a name it does not hold stays foreign.
EMBEDDED_NAMED: tuple[tuple[str, re.Pattern[bytes], str], ...] = (
    ("cublas", re.compile(rb"_ZN7cutlass(?:6Kernel|7Kernel2)I\d{1,3}cutlass_\w{1,160}?EEvNT_6ParamsE"),
     "cuBLAS's cutlass kernels loaded from embedded modules"),
)
# A record holds mangled names and, marked so, the templates; no symbol contains a space.
TEMPLATE_MARK = "template "
LIST_FORMAT = "3"  # part of each record's file name: records of an older format are listed again
MAX_TEMPLATE_NAME = 512  # longer names are never matched against templates (no kernel name of theirs is)
_TEMPLATE_TEXT = re.compile(rb"[A-Za-z0-9_%]{1,200}")


class KernelListsUnavailable(RuntimeError):
    """A library the judgment needs could not be found or read: a judge problem, never a verdict."""


@dataclass(frozen=True)
class KernelLists:
    """Normalised names (mangled and demangled) of the kernels in PyTorch's binaries and in each allowed
    library that was listed, with the files each came from (for reasons and the record)."""

    torch: frozenset[str] = frozenset()
    libraries: dict[str, frozenset[str]] = field(default_factory=dict)
    templates: dict[str, tuple[NameTemplate, ...]] = field(default_factory=dict)  # run-time names (RUNTIME_NAMED)
    files: dict[str, tuple[str, ...]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # kernels (mangled names) per list

    def in_torch(self, name: str) -> bool:
        return normalise(name) in self.torch

    def library_of(self, name: str) -> str | None:
        """The allowed library ("cublas", "cudnn") whose binaries hold a kernel of this name, if any."""
        key = normalise(name)
        listed = next((lib for lib, names in sorted(self.libraries.items()) if key in names), None)
        if listed or len(name) > MAX_TEMPLATE_NAME:
            return listed
        return next((lib for lib, found in sorted(self.templates.items()) if any(t.matches(name) for t in found)),
                    None)  # fmt: skip

    def summary(self) -> dict[str, object]:
        return {"files": {k: [Path(f).name for f in v] for k, v in self.files.items()}, "kernels": dict(self.counts)}


def site_packages() -> Path | None:
    """The folder torch is installed in (without importing torch)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


def torch_binaries(root: Path | None = None) -> list[Path]:
    """PyTorch's own CUDA libraries: every `torch/lib/*.so` (libtorch_cuda, libtorch_cuda_linalg, ...);
    those without device code list no kernels."""
    root = root or site_packages()
    folder = root / "torch" / "lib" if root else None
    return sorted(p for p in folder.glob("*.so*") if p.is_file()) if folder and folder.is_dir() else []


def library_binaries(library: str, root: Path | None = None) -> list[Path]:
    """The files of an allowed library as torch's wheel ships them (site-packages/nvidia/*/lib, or
    torch/lib where a build bundles them), by real path, each once."""
    root = root or site_packages()
    if root is None:
        return []
    pattern = LIBRARY_FILES[library]
    folders = [root / "torch" / "lib", *sorted((root / "nvidia").glob("*/lib"))]
    found = {p.resolve() for folder in folders if folder.is_dir() for p in folder.iterdir()
             if pattern.match(p.name) and p.is_file()}  # fmt: skip
    return sorted(found)


def _identity(path: Path) -> tuple[str, int, int, int]:
    info = path.stat()
    return str(path.resolve()), info.st_size, info.st_mtime_ns, info.st_ino


class ListCache:
    """One authenticated record of mangled kernel names per library file (see the module docstring)."""

    def __init__(self, secret: bytes, root: Path | None = None, persistent: bool = True) -> None:
        if len(secret) < 16:
            raise ValueError("the kernel-list cache needs a secret of at least 16 bytes")
        self.root = root or cache_root() / "kernel-lists"
        self._secret = secret
        self.persistent = persistent  # False: nothing read from or written to disk
        self.rejected = 0  # records found but refused (authentication, identity, unreadable)

    def _path(self, identity: tuple[str, int, int, int]) -> Path:
        return self.root / f"{hashlib.sha256(repr((LIST_FORMAT, identity)).encode()).hexdigest()[:32]}.json"

    @staticmethod
    def _payload(identity: tuple[str, int, int, int], names: list[str]) -> bytes:
        return json.dumps({"identity": list(identity), "names": names}, separators=(",", ":")).encode()

    def get(self, identity: tuple[str, int, int, int]) -> list[str] | None:
        if not self.persistent:
            return None
        try:
            with open(self._path(identity), "rb") as handle:
                raw = handle.read(MAX_RECORD_BYTES + 1)
        except OSError:
            return None
        try:
            data = json.loads(raw) if len(raw) <= MAX_RECORD_BYTES else None
            names = data.get("names") if isinstance(data, dict) else None
            if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
                raise ValueError("malformed record")
            if data.get("identity") != list(identity) or not verify(self._secret, self._payload(identity, names), data.get("mac")):
                raise ValueError("record failed authentication")
            return names
        except (ValueError, TypeError, AttributeError):
            self.rejected += 1
            return None

    def put(self, identity: tuple[str, int, int, int], names: list[str]) -> None:
        if not self.persistent:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        path = self._path(identity)
        record = {"identity": list(identity), "names": names, "mac": sign(self._secret, self._payload(identity, names))}
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        tmp.write_text(json.dumps(record, separators=(",", ":")))
        os.replace(tmp, path)


_memory: dict[tuple[str, int, int, int], tuple[frozenset[str], int, tuple[str, ...]]] = {}  # by file identity
_listing = threading.Lock()  # one listing at a time: parallel builds must not read libtorch_cuda twice


def runtime_templates(path: Path, library: str) -> list[str]:
    """The name templates of kernels `library` assembles at run time (RUNTIME_NAMED), as its file holds
    them: NUL-terminated strings that start with a listed prefix and hold a conversion."""
    prefixes = [prefix for lib, prefix, _ in RUNTIME_NAMED if lib == library]
    if not prefixes or path.stat().st_size == 0:
        return []
    found: set[str] = set()
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for prefix in prefixes:
            at = data.find(prefix)
            while at >= 0:
                text = _TEMPLATE_TEXT.match(data, at)
                end = text.end() if text else at
                if text and end < len(data) and data[end] == 0 and b"%" in text.group():
                    found.add(text.group().decode())
                at = data.find(prefix, at + 1)
    return sorted(t for t in found if NameTemplate.parse(t) is not None)


def embedded_names(path: Path, library: str) -> list[str]:
    """Mangled names of the kernels `library` loads from modules embedded in its file (EMBEDDED_NAMED)."""
    patterns = [pattern for lib, pattern, _ in EMBEDDED_NAMED if lib == library]
    if not patterns or path.stat().st_size == 0:
        return []
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return sorted({m.group().decode() for pattern in patterns for m in pattern.finditer(data)})


def file_kernels(path: Path, cache: ListCache, library: str = TORCH) -> tuple[frozenset[str], int, tuple[str, ...]]:
    """Normalised names (mangled and demangled) of the kernels in one library file, how many kernels it
    has, and the templates of those it names at run time: from memory, the cache, or its binary."""
    identity = _identity(path)
    with _listing:
        if identity not in _memory:
            record = cache.get(identity)
            if record is None:
                listed = library_entries(path) | set(embedded_names(path, library))
                record = sorted(listed) + [TEMPLATE_MARK + t for t in runtime_templates(path, library)]
                cache.put(identity, record)
            names = [n for n in record if not n.startswith(TEMPLATE_MARK)]
            templates = tuple(n[len(TEMPLATE_MARK):] for n in record if n.startswith(TEMPLATE_MARK))
            _memory[identity] = (frozenset(normalise(n) for m in names for n in (m, demangle(m))), len(names),
                                 templates)  # fmt: skip
        return _memory[identity]


def kernel_lists(libraries: Iterable[str], cache: ListCache, root: Path | None = None) -> KernelLists:
    """PyTorch's kernels, and those of each allowed library in `libraries` ("cublas", "cudnn").

    Raises KernelListsUnavailable when a library asked for has no file here: its kernels could not be
    told from anyone else's (honest calls would be refused), so the judgment must not go on."""
    read = {TORCH: [(p, file_kernels(p, cache)) for p in torch_binaries(root)]}
    for library in sorted(set(libraries)):
        found = library_binaries(library, root)
        if not found:
            raise KernelListsUnavailable(f"no {library} library was found beside torch ({root or site_packages()}): "
                                         "its kernels cannot be attributed")  # fmt: skip
        read[library] = [(p, file_kernels(p, cache, library)) for p in found]
    names = {k: frozenset().union(*(n for _, (n, _, _) in v)) for k, v in read.items()}
    templates = {k: tuple(p for t in sorted({t for _, (_, _, ts) in v for t in ts}) if (p := NameTemplate.parse(t)))
                 for k, v in read.items() if k != TORCH}  # fmt: skip
    return KernelLists(
        torch=names.pop(TORCH), libraries=names, templates={k: v for k, v in templates.items() if v},
        files={k: tuple(str(p) for p, (_, count, _) in v if count) for k, v in read.items()},
        counts={k: sum(count for _, (_, count, _) in v) for k, v in read.items()},
    )  # fmt: skip
