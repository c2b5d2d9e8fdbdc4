"""Candidate outputs handed to the reference worker through sealed shared memory instead of files.

A judgment moves every output nine times (six verification runs, three spot checks of timed calls).
Through files each move was a device-to-host copy, a write, a read and a host-to-device copy: about
0.25 s per 128 MB on the H200 host, 1 s per 512 MB. Here the candidate worker keeps two shared memory
buffers (`memfd`), registered with CUDA so that copies into them are DMA, and writes each output in the
tensor-file format (tensorfile.py) into the one the reference is not reading; the reference maps the
same memory and copies the output straight to the GPU.

Why this holds against a hostile candidate:
- The buffer is sealed against shrinking (`F_SEAL_SHRINK`) before anyone else sees it, and the reader
  refuses a buffer without that seal: its mapping can never lose pages under it (no SIGBUS).
- The reader copies the header before parsing it and bounds-checks every view against the buffer's
  fixed size (tensorfile.decode); values the candidate changes meanwhile only change what is compared,
  and the comparison is of one snapshot copied to the GPU.
- The reader refuses huge-page buffers (a fault there can raise SIGBUS when huge pages run out) and
  buffers much larger than the expected outputs (`max_bytes`), which it would otherwise map and
  page-lock.
- The reader opens the buffer through `/proc/<pid>/fd/<n>` of the candidate worker it was told about,
  and keys its mappings by inode, so a reused descriptor number is never mistaken for an old buffer.

Two buffers suffice: the judge settles the comparison of output k before the candidate computes k + 2.
Where memfd, the seals or `/proc` are unavailable, the judge falls back to files (decide/verify_stage.py
probes once).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import mmap
import os
import stat
import warnings
from dataclasses import dataclass
from typing import Any

import torch

from cuda_agent.judge.common import tensorfile
from cuda_agent.judge.common.cudart import cuda_runtime

F_ADD_SEALS = 1033
F_GET_SEALS = 1034
F_SEAL_SEAL = 0x1
F_SEAL_SHRINK = 0x2
F_SEAL_GROW = 0x4
HOST_REGISTER_READ_ONLY = 0x8  # cudaHostRegisterReadOnly
GRANULE = 2 << 20


def _register(address: int, size: int, flags: int) -> int | None:
    """Page-lock a mapping for CUDA, so copies to and from it are DMA; None where CUDA refuses (the
    copies still work, through the runtime's staging buffer)."""
    cudart = cuda_runtime()
    if cudart is None or size == 0 or not torch.cuda.is_available():
        return None
    code = cudart.cudaHostRegister(ctypes.c_void_p(address), ctypes.c_size_t(size), ctypes.c_uint(flags))
    if code != 0:
        cudart.cudaGetLastError()  # leave no error behind for torch's next check to trip over
        return None
    return address


def _unregister(address: int | None) -> None:
    cudart = cuda_runtime()
    if address is not None and cudart is not None:
        cudart.cudaHostUnregister(ctypes.c_void_p(address))
        cudart.cudaGetLastError()


def _address_of(view: mmap.mmap) -> int:
    """The address of a mapping (read-only ones too, which ctypes' from_buffer refuses)."""
    if not len(view):
        return 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # non-writable buffer: only its address is taken
        return torch.frombuffer(view, dtype=torch.uint8, count=1).data_ptr()


@dataclass
class _Buffer:
    fd: int
    view: mmap.mmap
    size: int
    registered: int | None

    @property
    def path(self) -> str:
        return f"/proc/{os.getpid()}/fd/{self.fd}"

    def close(self) -> None:
        _unregister(self.registered)
        with contextlib.suppress(BufferError, ValueError):
            self.view.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)


class OutputBuffers:
    """The candidate worker's side: two sealed shared buffers, used in turn, grown when an output is
    larger than the buffer whose turn it is."""

    def __init__(self) -> None:
        self.buffers: list[_Buffer | None] = [None, None]
        self.turn = 0

    def write(self, obj: Any) -> str:
        """Write `obj` (tensors in lists/tuples) as a tensor file into the next buffer; its /proc path."""
        layout = tensorfile.plan(obj)
        index = self.turn
        self.turn ^= 1
        buffer = self.buffers[index]
        if buffer is None or buffer.size < layout.size:
            if buffer is not None:
                buffer.close()
            buffer = self.buffers[index] = _new_buffer(layout.size)
        tensorfile.write_into(layout, buffer.view)
        return buffer.path

    def close(self) -> None:
        for buffer in self.buffers:
            if buffer is not None:
                buffer.close()
        self.buffers = [None, None]


def _new_buffer(needed: int) -> _Buffer:
    size = max(GRANULE, -(-needed // GRANULE) * GRANULE)
    fd = os.memfd_create("cuda-agent-output", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
        view = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    except BaseException:
        os.close(fd)
        raise
    return _Buffer(fd=fd, view=view, size=size, registered=_register(_address_of(view), size, 0))


class UnsafeBuffer(ValueError):
    """A shared buffer the reference must not read: not a memfd sealed against shrinking, on huge pages,
    or larger than the expected outputs need."""


class SharedOutputReader:
    """The reference worker's side: maps the candidate's buffers (read-only), kept per inode for the
    judgment, and decodes tensor files from them onto the GPU."""

    def __init__(self) -> None:
        self.mapped: dict[tuple[int, int], tuple[mmap.mmap, int | None]] = {}

    def load(self, path: str, max_bytes: int, device: str = "cuda") -> Any:
        """Decode the tensor file in the buffer at `path`. Buffers larger than `max_bytes` are refused:
        mapping and page-locking a huge sparse buffer would take the host's memory."""
        view = self._map(path, max_bytes)
        return tensorfile.decode(view, device)

    def _map(self, path: str, max_bytes: int) -> mmap.mmap:
        # Non-blocking: a FIFO behind the path would block a plain open until the call's limit, and the
        # reference failing is a task_error, no reward either way (tensorfile.read_untrusted, the same
        # hazard in file mode). A memfd is a regular file; anything else is refused before it is read.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise UnsafeBuffer("the output buffer is not a regular file (a FIFO or a device?)")
            key = (info.st_dev, info.st_ino)
            if key in self.mapped:
                return self.mapped[key][0]
            seals = fcntl.fcntl(fd, F_GET_SEALS)  # fails for anything but a memfd
            if not seals & F_SEAL_SHRINK:
                raise UnsafeBuffer("the output buffer is not sealed against shrinking")
            if info.st_size <= 0:
                raise UnsafeBuffer("the output buffer is empty")
            if info.st_blksize != mmap.PAGESIZE:  # hugetlb memfds fault with SIGBUS when pages run out
                raise UnsafeBuffer("the output buffer is not ordinary shared memory (huge pages?)")
            if info.st_size > max_bytes:
                raise UnsafeBuffer(f"the output buffer has {info.st_size} bytes, more than the {max_bytes} "
                                   "the expected outputs need")  # fmt: skip
            view = mmap.mmap(fd, info.st_size, mmap.MAP_SHARED, mmap.PROT_READ)
        except OSError as exc:
            raise UnsafeBuffer(f"cannot map the output buffer ({exc})") from exc
        finally:
            os.close(fd)
        registered = _register(_address_of(view), info.st_size, HOST_REGISTER_READ_ONLY)
        self.mapped[key] = (view, registered)
        return view

    def close(self) -> None:
        for view, registered in self.mapped.values():
            _unregister(registered)
            with contextlib.suppress(BufferError, ValueError):
                view.close()
        self.mapped = {}

