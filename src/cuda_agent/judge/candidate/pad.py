"""The timing protocol's pad (docs/design/timing.md, sampler.py): the judge kernel that runs before every
timed call, filling every thread slot of every SM, spinning to a deadline and then writing 256 MB that
evicts L2 (its second half stamped, `FlushStamps`), then holding every block until the whole flush is done;
the same kernel without its flush is the spin that covers a round's draw. Also the lengths of pad and cover
(`pad_for`, `cover_for`), the one flush buffer per process, and the fallback where the driver API is missing.

Trust boundary: loaded in both workers (sampler.py says what its samples are worth in each); the parent's
drain (trusted/drain.py) launches the same kernel.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

L2_FLUSH_BYTES = 256 << 20
# The pad covers this multiple of the measured host enqueue time plus a constant, within bounds.
PAD_FACTOR = 1.25
PAD_EXTRA_MS = 0.02
PAD_MIN_MS = 0.02
PAD_MAX_MS = 2.0
# The spin before a call's draw covers this multiple of the draw's host time plus a constant, within
# bounds (H200, 2026-12-02: a draw's host time 0.38-0.64 ms, its p90 1.06-1.14 x the median; covered, the
# per-call overhead's margin stayed that of inputs drawn before the round, exposed it grew 2-6x).
COVER_FACTOR = 1.25
COVER_EXTRA_MS = 0.05
COVER_MAX_MS = 5.0
# The pad spins for the pad plus this share of the flush allowance, then flushes: nominally 1.2 x allowance +
# pad in all, v5's length (its flush came first and its spin ran to that deadline).
PAD_SPIN_FLUSH_SHARE = 0.2

# The host release (protocol v7): after its spin, thread 0 of block 0 polls a word in mapped host memory
# until the host has written the launch's target there (the sampler writes it right after the call and its
# end event are enqueued), then opens a gate word in device memory that thread 0 of every other block polls
# (one reader over PCIe, not one per block: the host's own launches travel the same link), and each block
# goes on to the flush. The spin's length (`pad_for`) was the host
# enqueue time measured once at warm-up; when the host was slower during the rounds (a busy host: builds,
# other workers), the call's first kernel reached the GPU after the start event and the host's time was
# counted as device time. H200, 2026-12-04, five cold runs of row_softmax: torch.compile's host enqueue
# measured 0.07 ms in three runs and 0.21-0.23 ms in two; with pads of 0.11-0.14 ms the compile baseline
# read 0.082-0.088 ms with a 6-7% spread, with 0.28-0.31 ms pads 0.080 ms with 0.8-1.3%, and the reward
# flipped. With the release the spin only sets a minimum, and no host delay reaches the events. The wait
# is bounded (a call that waits for the GPU inside would otherwise wait for itself): it ends this long after
# the pad's start at the latest, and such a contender gets no release (`Sampler.release_ok`).
PAD_RELEASE_WAIT_MS = 10.0

# After its flush part, every block of the pad waits (thread 0 polling a launch counter, the others at a
# barrier) until every block of the grid finished its flush, so all SMs are released together right before
# the start event (H200, v6 without it: a side-stream kernel started on SMs the flush freed and hid 11% of
# itself, tests/gpu/test_timing_gpu.py). The wait is bounded: where some pad block could not be resident (a
# stranger holding SMs at launch; the GPU is idle there in the protocol) it gives up after this long.
PAD_HOLD_TIMEOUT_NS = 2_000_000

_PAD_PTX_TEXT = r"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry judge_pad_flush(
	.param .u64 p_buf,
	.param .u64 p_n16,
	.param .u64 p_spin_ns,
	.param .u64 p_stamps,
	.param .u64 p_hold,
	.param .u64 p_release,
	.param .u64 p_release_target,
	.param .u64 p_release_wait_ns,
	.param .u64 p_gate
)
.maxnreg 32
{
	.reg .pred %p<15>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<38>;

	mov.u64 %rd10, %globaltimer;
	ld.param.u64 %rd1, [p_buf];
	ld.param.u64 %rd2, [p_n16];
	ld.param.u64 %rd3, [p_spin_ns];
	ld.param.u64 %rd13, [p_stamps];
	add.u64 %rd11, %rd10, %rd3;
SPIN:
	mov.u64 %rd12, %globaltimer;
	setp.lt.u64 %p2, %rd12, %rd11;
	@%p2 bra SPIN;
	ld.param.u64 %rd30, [p_release];
	setp.eq.u64 %p8, %rd30, 0;
	@%p8 bra RELEASED;
	mov.u32 %r6, %tid.x;
	setp.ne.u32 %p9, %r6, 0;
	@%p9 bra WAITED;
	ld.param.u64 %rd31, [p_release_target];
	ld.param.u64 %rd32, [p_release_wait_ns];
	add.u64 %rd32, %rd10, %rd32;
	ld.param.u64 %rd35, [p_gate];
	mov.u32 %r7, %ctaid.x;
	setp.ne.u32 %p12, %r7, 0;
	@%p12 bra WAIT_GATE;
WAIT_RELEASE:
	ld.relaxed.sys.global.u64 %rd33, [%rd30];
	setp.ge.u64 %p10, %rd33, %rd31;
	@%p10 bra OPEN_GATE;
	mov.u64 %rd34, %globaltimer;
	setp.lt.u64 %p11, %rd34, %rd32;
	@%p11 bra WAIT_RELEASE;
OPEN_GATE:
	st.relaxed.gpu.global.u64 [%rd35], %rd31;
	bra.uni WAITED;
WAIT_GATE:
	ld.relaxed.gpu.global.u64 %rd36, [%rd35];
	setp.ge.u64 %p13, %rd36, %rd31;
	@%p13 bra WAITED;
	mov.u64 %rd37, %globaltimer;
	setp.lt.u64 %p14, %rd37, %rd32;
	@%p14 bra WAIT_GATE;
WAITED:
	barrier.sync 0;
RELEASED:
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mov.u32 %r4, %nctaid.x;
	mul.wide.u32 %rd4, %r1, %r2;
	cvt.u64.u32 %rd5, %r3;
	add.u64 %rd21, %rd4, %rd5;
	mul.wide.u32 %rd7, %r4, %r2;
	shr.u64 %rd20, %rd2, 1;
	mov.u32 %r5, 0;
	setp.eq.u32 %p3, %r3, 0;
	setp.ne.u64 %p4, %rd13, 0;
	and.pred %p3, %p3, %p4;
	mov.u64 %rd6, %rd21;
FLUSH_FIRST_HALF:
	setp.ge.u64 %p1, %rd6, %rd20;
	@%p1 bra HALF;
	shl.b64 %rd8, %rd6, 4;
	add.u64 %rd9, %rd1, %rd8;
	st.global.v4.u32 [%rd9], {%r5, %r5, %r5, %r5};
	add.u64 %rd6, %rd6, %rd7;
	bra FLUSH_FIRST_HALF;
HALF:
	barrier.sync 0;
	@%p3 mov.u64 %rd14, %globaltimer;
	@%p3 atom.global.min.u64 %rd15, [%rd13], %rd14;
	add.u64 %rd6, %rd21, %rd20;
FLUSH_SECOND_HALF:
	setp.ge.u64 %p1, %rd6, %rd2;
	@%p1 bra DONE;
	shl.b64 %rd8, %rd6, 4;
	add.u64 %rd9, %rd1, %rd8;
	st.global.v4.u32 [%rd9], {%r5, %r5, %r5, %r5};
	add.u64 %rd6, %rd6, %rd7;
	bra FLUSH_SECOND_HALF;
DONE:
	barrier.sync 0;
	@%p3 mov.u64 %rd16, %globaltimer;
	@%p3 atom.global.max.u64 %rd17, [%rd13+8], %rd16;
	setp.ne.u32 %p5, %r3, 0;
	@%p5 bra RELEASE;
	ld.param.u64 %rd18, [p_hold];
	atom.global.add.u64 %rd19, [%rd18], 1;
	cvt.u64.u32 %rd22, %r4;
	div.u64 %rd23, %rd19, %rd22;
	add.u64 %rd23, %rd23, 1;
	mul.lo.u64 %rd23, %rd23, %rd22;
	mov.u64 %rd24, %globaltimer;
	add.u64 %rd24, %rd24, HOLD_TIMEOUT_NS;
HOLD:
	ld.volatile.global.u64 %rd25, [%rd18];
	setp.ge.u64 %p6, %rd25, %rd23;
	@%p6 bra RELEASE;
	mov.u64 %rd26, %globaltimer;
	setp.lt.u64 %p7, %rd26, %rd24;
	@%p7 bra HOLD;
RELEASE:
	barrier.sync 0;
	ret;
}
"""
PAD_PTX = _PAD_PTX_TEXT.replace("HOLD_TIMEOUT_NS", str(PAD_HOLD_TIMEOUT_NS))


class Driver:
    """The few CUDA driver calls the pad kernel needs (loaded from the driver torch already uses)."""

    def __init__(self) -> None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
        lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
        lib.cuOccupancyMaxActiveBlocksPerMultiprocessor.argtypes = [
            ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t,
        ]  # fmt: skip
        lib.cuLaunchKernel.argtypes = [
            ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
            ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ]  # fmt: skip
        self.lib = lib

    def check(self, status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"{what} failed (CUresult {status})")


class ReleaseWord:
    """One u64 in page-locked host memory mapped into the device's address space: the host writes
    increasing targets to it (`release`), the pad kernel polls it (`launch(..., release=target)`). Written
    by this process only, in order, one launch at a time on one stream."""

    CU_MEMHOSTALLOC_PORTABLE = 0x01
    CU_MEMHOSTALLOC_DEVICEMAP = 0x02

    def __init__(self, host_ptr: int, device_ptr: int) -> None:
        self.host_ptr, self.device_ptr = host_ptr, device_ptr
        self.word = ctypes.c_uint64.from_address(host_ptr)
        self.word.value = 0
        self.issued = 0

    @classmethod
    def create(cls, driver: Driver) -> ReleaseWord | None:
        """Allocate the word in the current context (None where the driver refuses: the pad then spins
        for its measured length only, as protocol v6 did)."""
        lib = driver.lib
        try:
            lib.cuMemHostAlloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_uint]
            lib.cuMemHostGetDevicePointer_v2.argtypes = [
                ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p, ctypes.c_uint,
            ]  # fmt: skip
        except AttributeError:
            return None
        host, device = ctypes.c_void_p(), ctypes.c_uint64()
        flags = cls.CU_MEMHOSTALLOC_PORTABLE | cls.CU_MEMHOSTALLOC_DEVICEMAP
        if lib.cuMemHostAlloc(ctypes.byref(host), 64, flags) != 0 or not host.value:
            return None
        if lib.cuMemHostGetDevicePointer_v2(ctypes.byref(device), host, 0) != 0 or not device.value:
            return None
        return cls(host.value, device.value)

    def next_target(self) -> int:
        """The target of the next launch that waits (released by `release(target)`)."""
        self.issued += 1
        return self.issued

    def release(self, target: int) -> None:
        """Let every launch waiting for `target` (or an earlier one) go on. A plain aligned 8-byte store:
        the GPU's system-scope loads see it without a fence of ours (x86 stores are not reordered with
        each other, and nothing else is published through the word)."""
        if target > self.word.value:
            self.word.value = target


class FlushStamps:
    """Where the pad kernel writes when the second half of its flush began (the earliest block) and ended
    (the latest), one pair of u64 `%globaltimer` readings per event slot of a round. Reset when the round
    is set up (outside the clock), read once after its timed loop: work that runs during a pad's flush (a
    copy engine staging a weight into L2, a side-stream kernel on SMs the flush freed early) shares DRAM
    with it and shows as a longer flush than the round's calibration samples had, which the round is
    charged. Only the second half is timed: the first 128 MB leave L2 full of the flush's own lines
    whatever came before, and what the previous call left dirty (up to all of L2, written back during the
    first half) made whole flushes differ by up to a fifth between a pad after a call and one after a
    flush. The second half alone (2x L2) evicts whatever the first half let in."""

    def __init__(self, slots: int) -> None:
        import torch

        self.values = torch.zeros((slots, 2), dtype=torch.int64, device="cuda")
        self.values[:, 0] = -1  # the largest u64: the blocks' atomic minimum lowers it
        self.base = int(self.values.data_ptr())

    def address(self, slot: int) -> int:
        return self.base + 16 * slot

    def flush_ms(self) -> list[float | None]:
        """Each slot's flush, first block's start to last block's end, in ms (None: no flush recorded)."""
        out: list[float | None] = []
        for began, ended in self.values.tolist():
            began, ended = began & _U64, ended & _U64
            out.append((ended - began) / 1e6 if began != _U64 and ended >= began else None)
        return out


_U64 = (1 << 64) - 1


class PadKernel:
    """`judge_pad_flush`: 2 x 1024 threads per SM (every thread slot), a spin to a deadline, then a 256 MB
    write that evicts L2 right before the call's start event, in two halves with the second one stamped
    (protocol v6: the flush is the pad's last act, so nothing staged into L2 while it spins survives; v5
    flushed first and spun after, and a copy on the copy engines, which the pad does not occupy, warmed L2
    for the call during the spin). Then the hold: every block stays resident until all blocks finished
    their flush part, so no SM is free for another stream's kernel before the whole pad ends (the grid is
    what the occupancy query says fits at once, launched on an idle GPU, so all its blocks are resident)."""

    THREADS = 1024

    def __init__(self, buffer: Any, sm_count: int, ptx: str = PAD_PTX) -> None:
        """`ptx`: the kernel's text (another only in A/B probes, benchmarks/timing_l2_staging.py)."""
        import torch

        self.driver = Driver()
        lib, check = self.driver.lib, self.driver.check
        module, func, per_sm = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int()
        check(lib.cuModuleLoadData(ctypes.byref(module), ptx.encode() + b"\0"), "cuModuleLoadData")
        check(lib.cuModuleGetFunction(ctypes.byref(func), module, b"judge_pad_flush"), "cuModuleGetFunction")
        check(lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(per_sm), func, self.THREADS, 0),
              "cuOccupancyMaxActiveBlocksPerMultiprocessor")  # fmt: skip
        self.module, self.func = module, func
        self.blocks_per_sm = max(1, per_sm.value)
        self.grid = sm_count * self.blocks_per_sm
        self.buffer_ptr = int(buffer.data_ptr())
        self.n16 = buffer.numel() // 16
        # The hold's launch counter: every block adds 1, so after k launches it holds k x grid and a block
        # of launch k waits for (k + 1) x grid; launches on one stream never overlap, so it needs no reset.
        self.hold = torch.zeros(1, dtype=torch.int64, device=buffer.device)
        self.hold_ptr = int(self.hold.data_ptr())
        self.release = ReleaseWord.create(self.driver)  # None where mapped host memory is unavailable
        # The device word block 0 opens for the others once the host released the launch (targets only grow).
        self.gate = torch.zeros(1, dtype=torch.int64, device=buffer.device)
        self.gate_ptr = int(self.gate.data_ptr())

    def new_stamps(self, slots: int) -> FlushStamps:
        """Fresh flush stamps for a round of `slots` event slots."""
        return FlushStamps(slots)

    def launch(self, stream: int, spin_ms: float, flush: bool = True, stamps: int = 0, release: int = 0) -> None:
        """Spin `spin_ms` after start, then flush (unless `flush` is False: a pure spin, the draw's cover),
        writing its second half's first start and last end to the two u64 at `stamps` (0: nowhere). With
        `release` (a target from `self.release.next_target()`, 0: none) the spin also waits until the host
        released that target, for at most PAD_RELEASE_WAIT_MS after the pad's start."""
        word = self.release.device_ptr if release and self.release is not None else 0
        wait_ns = int((spin_ms + PAD_RELEASE_WAIT_MS) * 1e6)
        args = [ctypes.c_uint64(self.buffer_ptr), ctypes.c_uint64(self.n16 if flush else 0),
                ctypes.c_uint64(max(0, int(spin_ms * 1e6))), ctypes.c_uint64(stamps if flush else 0),
                ctypes.c_uint64(self.hold_ptr), ctypes.c_uint64(word), ctypes.c_uint64(release if word else 0),
                ctypes.c_uint64(wait_ns), ctypes.c_uint64(self.gate_ptr)]  # fmt: skip
        params = (ctypes.c_void_p * len(args))(*(ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args))
        self.driver.check(
            self.driver.lib.cuLaunchKernel(self.func, self.grid, 1, 1, self.THREADS, 1, 1, 0,
                                           ctypes.c_void_p(stream), params, None),
            "cuLaunchKernel(judge_pad_flush)",
        )  # fmt: skip


def release_target(kernel: PadKernel | None, enabled: bool) -> int:
    """A fresh target for the next pad to wait for (0: the pad does not wait)."""
    word = getattr(kernel, "release", None) if enabled else None
    return word.next_target() if word is not None else 0


def release(kernel: PadKernel | None, target: int) -> None:
    """Let the pad waiting for `target` go on (nothing for 0)."""
    word = getattr(kernel, "release", None) if target else None
    if word is not None:
        word.release(target)


def release_policy(kernel: PadKernel | None, enabled: bool) -> str:
    """What a sampler's pads wait for, in words (the verdict's timing policy)."""
    if getattr(kernel, "release", None) is None:
        return "none: the pad spins its measured length only (no mapped host memory)"
    if not enabled:
        return "none: the call waits for the GPU inside, so the pad spins its measured length only"
    return f"the host's release after the call is enqueued (at most the spin + {PAD_RELEASE_WAIT_MS:g} ms)"


def pad_for(host_ms: float) -> float:
    """The pad that hides a host enqueue time of `host_ms` (bounded)."""
    return min(PAD_MAX_MS, max(PAD_MIN_MS, PAD_FACTOR * host_ms + PAD_EXTRA_MS))


def cover_for(draw_ms: float) -> float:
    """The spin that hides a draw's host time of `draw_ms` (bounded; 0 for a draw that waits for the GPU
    inside, which no spin can hide)."""
    return min(COVER_MAX_MS, COVER_FACTOR * draw_ms + COVER_EXTRA_MS) if draw_ms > 0 else 0.0


@functools.cache
def flush_buffer() -> Any:
    """One 256 MB flush buffer per process, shared by every sampler (K compile builds need no K copies)."""
    import torch

    return torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")


@functools.cache
def pad_kernel() -> PadKernel | None:
    import torch

    try:
        torch.cuda.init()
        torch.empty(1, device="cuda")  # the primary context current on this thread
        sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        return PadKernel(flush_buffer(), sms)
    except (OSError, RuntimeError, AttributeError):
        return None


@functools.cache
def sleep_cycles_per_ms() -> float:
    """Clock cycles torch.cuda._sleep spins per millisecond on this GPU (fallback pad only)."""
    import torch

    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cycles = 2_000_000
    torch.cuda._sleep(1000)
    a.record()
    torch.cuda._sleep(cycles)
    b.record()
    torch.cuda.synchronize()
    return cycles / max(1e-3, a.elapsed_time(b))
