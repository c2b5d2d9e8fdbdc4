"""The kernels of a large CUDA library, read from its fat binary: compressed entries included.

device_code.py reads the submission's own extension, which the judge builds uncompressed. The libraries
whose kernels the coverage gate must recognise (libtorch_cuda, cuBLAS, cuBLASLt, cuDNN, as torch's wheel
ships them) are hundreds of MB with every cubin compressed: their `.nv_fatbin` section holds fat binary
containers (magic 0xBA55ED50), each a list of entries -- one cubin (an ELF for the GPU) or one PTX text per
GPU architecture -- whose payloads are zstd frames in CUDA 12.8 and later (LZ4 before). This module walks
the containers, decompresses each entry with the system's libzstd (through ctypes, one entry at a time,
so a 500 MB library needs a few hundred MB of memory, not the 5.7 GB `cuobjdump -symbols` takes for
libtorch_cuda.so) and names every entry function of every cubin, and every `.entry` of the PTX. Where an
entry cannot be decoded here (LZ4, no libzstd, an unknown layout) it asks `cuobjdump`, which decompresses
every format; the two were compared on the torch 2.14 wheel's libraries (identical sets).

Container header: u32 magic, u16 version, u16 header size, u64 size of its entries. Entry header: u16
kind (1 PTX, 2 ELF), u16 version, u32 header size, u64 payload size (padded), u32 compressed size at 0x10,
u64 decompressed size at 0x38 (headers of 0x40 bytes or more); the payload follows the header.

Runs in the judge's parent on files of the installed torch (trusted code, not the candidate's).
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import struct
from pathlib import Path

from cuda_agent.judge.trusted.device_code import (
    _PTX_ENTRY,
    DeviceCodeError,
    _cubin_entries,
    _cuobjdump_entries,
    _sections,
)

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX = 1
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ELF_MAGIC = b"\x7fELF"
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQ")  # kind, version, header size, payload size
_COMPRESSED_SIZE = struct.Struct("<I")  # at 0x10
_DECOMPRESSED_SIZE = struct.Struct("<Q")  # at 0x38
_MAX_ENTRY_BYTES = 1 << 31  # a decompressed cubin larger than this is not one


class UndecodedEntry(DeviceCodeError):
    """An entry this reader cannot decompress (LZ4, no libzstd): cuobjdump reads the file instead."""


@functools.cache
def _zstd() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libzstd.so.1")
    except OSError:
        return None
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    lib.ZSTD_isError.restype = ctypes.c_uint
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    return lib


def _decompress_zstd(frame: bytes, size: int) -> bytes:
    lib = _zstd()
    if lib is None:
        raise UndecodedEntry("no libzstd.so.1 to decompress a zstd fat binary entry")
    if not 0 < size <= _MAX_ENTRY_BYTES:
        raise UndecodedEntry(f"implausible decompressed size {size}")
    out = ctypes.create_string_buffer(size)
    got = lib.ZSTD_decompress(out, size, frame, len(frame))
    if lib.ZSTD_isError(got):
        raise UndecodedEntry("a zstd fat binary entry did not decompress")
    return out.raw[:got]


def _payload(data: mmap.mmap, at: int, header_size: int, payload_size: int) -> bytes:
    """The entry's payload at `at` (its header's start), decompressed."""
    start = at + header_size
    raw = data[start : start + payload_size]
    if raw[:4] != ZSTD_MAGIC:
        return raw
    if header_size < 0x40:
        raise UndecodedEntry("a compressed entry without its sizes")
    (compressed,) = _COMPRESSED_SIZE.unpack_from(data, at + 0x10)
    (decompressed,) = _DECOMPRESSED_SIZE.unpack_from(data, at + 0x38)
    return _decompress_zstd(raw[: compressed or payload_size], decompressed)


def _entry_names(payload: bytes, kind: int) -> set[str]:
    if payload[:4] == ELF_MAGIC:
        return _cubin_entries(payload, 0)
    if kind == KIND_PTX and b".entry" in payload:
        return {m.group(1).decode() for m in _PTX_ENTRY.finditer(payload)}
    if kind == KIND_PTX:
        return set()  # PTX without kernels (device functions only)
    raise UndecodedEntry(f"an entry of kind {kind} that is neither ELF nor PTX (compressed another way?)")


def _walk(data: mmap.mmap, start: int, stop: int) -> set[str]:
    """Entry function names of every container between `start` and `stop`."""
    names: set[str] = set()
    at = start
    while at + _CONTAINER.size <= stop:
        magic, _version, header_size, size = _CONTAINER.unpack_from(data, at)
        if magic != FATBIN_MAGIC:
            at += 8  # containers are 8-byte aligned; padding between them
            continue
        entry, end = at + header_size, min(at + header_size + size, stop)
        while entry + _ENTRY.size <= end:
            kind, _v, entry_header, payload_size = _ENTRY.unpack_from(data, entry)
            if entry_header < _ENTRY.size or entry + entry_header + payload_size > end:
                raise UndecodedEntry("a fat binary entry runs past its container")
            names |= _entry_names(_payload(data, entry, entry_header, payload_size), kind)
            entry += entry_header + payload_size
        at = max(end, at + 8)
    return names


def library_entries(binary: Path) -> set[str]:
    """Mangled names of every kernel in `binary`'s fat binary (empty if it has none)."""
    with open(binary, "rb") as handle:
        try:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            return set()
        try:
            _, sections = _sections(data)  # type: ignore[arg-type]
            fatbins = [s for s in sections if s.name == ".nv_fatbin"]
            try:
                return set().union(*(_walk(data, s.offset, s.offset + s.size) for s in fatbins))
            except UndecodedEntry:
                return _cuobjdump_entries(binary)
        finally:
            data.close()
