"""What a built extension really contains: its GPU kernels and the symbols it imports, read from the binary.

Kernel attribution used to read `__global__` declarations out of the source text, which a comment, a macro, an
included `.inc` file or a `__launch_bounds__` before the return type fooled in both directions (PyTorch's
kernels counted as submitted; honest kernels counted as foreign). The binary cannot be fooled that way: nvcc
embeds every kernel it compiled as an entry function of a cubin (an ELF for the GPU) inside the host
library's `.nv_fatbin` section. This module reads those cubins with a small ELF reader (no CUDA tool needed;
the judge compiles with `--no-compress`, so the cubins are stored as plain ELF) and names every entry
function, mangled and demangled exactly as the profiler (Kineto, through `abi::__cxa_demangle`) names the
kernels it sees run. `cuobjdump` is used only as a fallback for a compressed fat binary.

It also lists the undefined symbols of host objects (`imported_symbols`), so rules about what a submission
calls (the Python C API, cuBLAS, cuDNN) look at what the linker will bind, however the source spelled it.

Everything here runs in the judge's trusted process on files the candidate can no longer change (the
built library is copied into the candidate's folder only after it was read).
"""

from __future__ import annotations

import ctypes
import functools
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

EM_CUDA = 190
STT_FUNC = 2
STO_CUDA_ENTRY = 0x10  # st_other bit nvcc sets on kernel (entry) functions
SHT_SYMTAB = 2
SHT_DYNSYM = 11
SHN_UNDEF = 0
_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_PTX_ENTRY = re.compile(rb"\.entry\s+([A-Za-z_$][\w$]*)")


class DeviceCodeError(RuntimeError):
    """The binary could not be read (not an ELF, truncated, compressed without a tool to read it)."""


@dataclass(frozen=True)
class Kernel:
    mangled: str
    demangled: str


@dataclass(frozen=True)
class _Section:
    name: str
    type: int
    offset: int
    size: int
    link: int
    entsize: int


def _sections(data: bytes, base: int = 0) -> tuple[int, list[_Section]]:
    """(e_machine, sections) of the ELF64 little-endian image starting at `base` in `data`."""
    if data[base : base + 4] != b"\x7fELF" or data[base + 4] != 2 or data[base + 5] != 1:
        raise DeviceCodeError("not a 64-bit little-endian ELF image")
    if len(data) < base + _ELF_HEADER.size:
        raise DeviceCodeError("truncated ELF header")
    fields = _ELF_HEADER.unpack_from(data, base)
    machine, shoff, shentsize, shnum, shstrndx = fields[2], fields[6], fields[11], fields[12], fields[13]
    if shentsize != _SECTION.size or shnum == 0 or base + shoff + shnum * shentsize > len(data):
        raise DeviceCodeError("bad or truncated ELF section table")
    raw = [_SECTION.unpack_from(data, base + shoff + i * shentsize) for i in range(shnum)]
    if shstrndx >= shnum:
        raise DeviceCodeError("bad ELF section-name index")
    names_at, names_size = raw[shstrndx][4], raw[shstrndx][5]
    names = data[base + names_at : base + names_at + names_size]
    sections = []
    for name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in raw:
        end = names.find(b"\0", name)
        label = names[name : end if end >= 0 else None].decode("latin-1")
        sections.append(_Section(label, kind, base + offset, size, link, entsize))
    for s in sections:
        if s.type != 8 and s.offset + s.size > len(data):  # 8 = SHT_NOBITS occupies no file space
            raise DeviceCodeError(f"ELF section {s.name} runs past the end of the file")
    return machine, sections


def _symbols(data: bytes, sections: list[_Section], kind: int) -> list[tuple[str, int, int, int]]:
    """(name, st_info, st_other, st_shndx) of every symbol in the tables of type `kind`."""
    found = []
    for table in (s for s in sections if s.type == kind and s.entsize == _SYMBOL.size):
        if table.link >= len(sections):
            continue
        strtab = sections[table.link]
        strings = data[strtab.offset : strtab.offset + strtab.size]
        for i in range(table.size // _SYMBOL.size):
            name_at, info, other, shndx, _value, _size = _SYMBOL.unpack_from(data, table.offset + i * _SYMBOL.size)
            end = strings.find(b"\0", name_at)
            name = strings[name_at : end if end >= 0 else None].decode("latin-1")
            if name:
                found.append((name, info, other, shndx))
    return found


def _cubin_entries(data: bytes, base: int) -> set[str]:
    machine, sections = _sections(data, base)
    if machine != EM_CUDA:
        return set()
    return {
        name
        for name, info, other, shndx in _symbols(data, sections, SHT_SYMTAB)
        if info & 0xF == STT_FUNC and other & STO_CUDA_ENTRY and shndx != SHN_UNDEF
    }


def fatbin_bytes(binary: Path) -> bytes:
    """The `.nv_fatbin` section of a host object or shared library (empty when it has none)."""
    data = Path(binary).read_bytes()
    _, sections = _sections(data)
    return b"".join(data[s.offset : s.offset + s.size] for s in sections if s.name == ".nv_fatbin")


def kernel_symbols(binary: Path) -> set[str]:
    """Mangled names of every kernel (entry function) in the device code of `binary`."""
    fatbin = fatbin_bytes(binary)
    names: set[str] = set()
    cubins = 0
    for match in re.finditer(rb"\x7fELF", fatbin):
        try:
            names |= _cubin_entries(fatbin, match.start())
            cubins += 1
        except DeviceCodeError:
            continue  # the magic inside some other payload
    names |= {m.group(1).decode() for m in _PTX_ENTRY.finditer(fatbin)}  # PTX kept for JIT, if any
    if fatbin and not cubins and not names:
        names = _cuobjdump_entries(binary)
    return names


def _cuobjdump_entries(binary: Path) -> set[str]:
    """Fallback for a compressed fat binary: ask cuobjdump (which decompresses) for the entry symbols."""
    tool = find_cuobjdump()
    if tool is None:
        raise DeviceCodeError(
            f"{binary.name} holds a compressed fat binary and no cuobjdump was found to read it"
        )
    listing = subprocess.run(
        [tool, "-symbols", str(binary)], capture_output=True, text=True, timeout=120, check=False
    )
    if listing.returncode != 0:
        raise DeviceCodeError(f"cuobjdump failed on {binary.name}: {listing.stderr.strip()[:300]}")
    return {line.split()[-1] for line in listing.stdout.splitlines() if "STO_ENTRY" in line and "STT_FUNC" in line}


def find_cuobjdump() -> str | None:
    """cuobjdump on PATH, in the CUDA toolkit, or the copy Triton ships."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    for candidate in (Path("/usr/local/cuda/bin/cuobjdump"),):
        if candidate.is_file():
            return str(candidate)
    try:
        import triton

        bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        return str(bundled) if bundled.is_file() else None
    except Exception:
        return None


@functools.cache
def _cxa_demangle() -> object | None:
    try:
        function = ctypes.CDLL("libstdc++.so.6").__cxa_demangle
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_void_p
    function.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    return function


@functools.cache
def _free() -> object:
    function = ctypes.CDLL(None).free
    function.argtypes = [ctypes.c_void_p]
    return function


def demangle(symbol: str) -> str:
    """The name the profiler shows for a kernel: `abi::__cxa_demangle`, as Kineto uses; unchanged if not mangled."""
    function = _cxa_demangle()
    if function is None or not symbol.startswith("_Z"):
        return symbol
    status = ctypes.c_int(0)
    pointer = function(symbol.encode(), None, None, ctypes.byref(status))  # type: ignore[operator]
    if not pointer or status.value != 0:
        return symbol
    try:
        return ctypes.string_at(pointer).decode(errors="replace")
    finally:
        _free()(pointer)  # type: ignore[operator]


def kernels(binary: Path) -> list[Kernel]:
    """Every kernel in `binary`'s device code, sorted by mangled name."""
    return [Kernel(m, demangle(m)) for m in sorted(kernel_symbols(binary))]


def imported_symbols(obj: Path) -> set[str]:
    """Undefined symbols of a host object or library: what it needs the linker or loader to bind."""
    data = Path(obj).read_bytes()
    _, sections = _sections(data)
    kind = SHT_SYMTAB if any(s.type == SHT_SYMTAB for s in sections) else SHT_DYNSYM
    return {name for name, _info, _other, shndx in _symbols(data, sections, kind) if shndx == SHN_UNDEF}


# Namespaces of the libraries whose kernels are foreign: a submission defining kernels there would have
# PyTorch's own kernels (same demangled name, launched by ATen) counted as its own.
TORCH_NAMESPACES = ("at::", "c10::", "torch::", "caffe2::")
RESERVED_KERNEL_PREFIXES = (*TORCH_NAMESPACES, "cudnn", "cublas")


def normalise(name: str) -> str:
    """Kernel names compared without whitespace and without a leading `void` (the return type the Itanium
    demangler prints for templates): demanglers differ in these at most."""
    return re.sub(r"\s+", "", re.sub(r"^\s*void\s+", "", name))


def qualified_name(demangled: str) -> str:
    """`void at::native::foo<4>(float*)` -> `at::native::foo`: the function's qualified name."""
    head = demangled.replace("(anonymous namespace)", "{anonymous}").split("(", 1)[0]
    depth, cut = 0, len(head)
    for i, ch in enumerate(head):  # drop template arguments: the first '<' at depth 0
        if ch == "<":
            if depth == 0:
                cut = min(cut, i)
            depth += 1
        elif ch == ">":
            depth -= 1
    head = head[:cut].strip()
    head = head.split(" ")[-1] if " " in head else head
    return head.replace("{anonymous}", "(anonymous namespace)")


def reserved_reason(reserved: list[str]) -> str:
    """Why a build with kernels in a reserved namespace is refused, and what to rename (both the CPU checks
    and the judgment's build stage say it)."""
    return (f"defines kernels in PyTorch's or a library's namespace, or named like PyTorch's own "
            f"({', '.join(reserved[:3])}): their launches could not be told from PyTorch's own; rename them (a "
            f"kernel's qualified name may not start with {', '.join(RESERVED_KERNEL_PREFIXES)}; e.g. a namespace "
            "`my_linear` instead of `cublas_linear`)")  # fmt: skip


def reserved_kernels(found: list[Kernel], taken: frozenset[str] = frozenset()) -> list[str]:
    """Kernels of a submission named in PyTorch's or a library's namespace (see RESERVED_KERNEL_PREFIXES),
    or named exactly like a kernel of PyTorch's own binaries (`taken`: normalised names, from
    library_kernels.py; e.g. `fmha_cutlassF_*` or `pytorch_flash::*`, in no reserved namespace): the
    launches of either could not be told from PyTorch's own."""
    return [k.demangled for k in found
            if qualified_name(k.demangled).startswith(RESERVED_KERNEL_PREFIXES)
            or normalise(k.mangled) in taken or normalise(k.demangled) in taken]  # fmt: skip
