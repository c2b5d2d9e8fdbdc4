"""The coverage gate: where a forward's GPU time goes, by the binary that holds each kernel.

The op gate sees dispatched PyTorch ops inside the candidate's process, where the candidate can reach it;
this sees the kernels that ran on the GPU, so it also catches work that bypasses the dispatcher (PyTorch's
kernels called directly, found by a run-time symbol lookup, or replayed from a CUDA graph captured while
the model loaded; libraries used beyond what the task allows; a decoy kernel beside the real work).

Attribution by binary, never by name pattern (issue 33): a kernel's name is not its identity (PyTorch's
flash-attention and cutlass kernels matched the old library patterns, and anyone can name a kernel
`*_gemm_xmma`). Every traced kernel is looked up in the exact lists of entry functions the judge read
from the binaries themselves, before the candidate ran:

- **submitted**: an entry of the extension's own device code (device_code.py) and of no PyTorch binary
  (a submission whose kernel is named like one of PyTorch's, or sits in a PyTorch or library namespace,
  is refused at build: `reserved_kernels`);
- **library**: an entry of cuBLAS/cuBLASLt (cuDNN) as torch's wheel ships them (library_kernels.py), where
  the reference has a matrix product (convolution), the submission's own objects call that library (the
  symbols they import: never one ATen launched for a submission that does not link the library), and the
  kernel is the library's GEMM (convolution) kind (`LIBRARY_PURPOSE`), and in no PyTorch binary;
- **neutral**: PyTorch's fills (torch.zeros, the judge's poison) and torch.cuda._sleep, as PyTorch's own
  binaries hold them, and the judge's pad kernel (`JUDGE_KERNELS`, loaded by the judge from its own PTX);
- **copies**: memcpy/memset activities, exactly as Kineto names them (data movement, not foreign compute:
  a concatenation may be all copies);
- **foreign**, everything else: PyTorch's kernels wherever they run (called from Python or C++, found at
  run time, replayed from a graph), library kernels not allowed here, and every name in no binary on disk
  (code loaded at run time with cuModuleLoadData, cudaLibraryLoadData, NVRTC: no list holds it).

The kernel lists come from profiled calls: every verification call, and timed rounds the parent chooses
at random after each round's inputs were drawn (decide/timing_stage.py); a submission that behaves
differently on untraced rounds is compared with itself by their times (decide/observed_timing.py). What
still tells a traced round from the others in the candidate's process is listed in
docs/design/trust_boundary.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.judge.trusted.device_code import kernels, normalise, qualified_name, reserved_kernels
from cuda_agent.judge.trusted.library_kernels import KernelLists
from cuda_agent.judge.trusted.static_checks import CONV_OPS, GEMM_OPS

# What an allowed library's kernel must also be to count: its GEMM (convolution) kind, by its qualified name
# (`qualified_name`: template and call arguments dropped, so `scal_kernel<...>(cublasTransposeParams...)`
# is no GEMM), so a cuBLAS or cuDNN routine outside the task's allowance (cuBLAS's scal, a cuDNN softmax on
# a task with a convolution) stays foreign. These decide use, never identity: identity is the library's
# own list.
# BLAS-3's triangular and symmetric products count as matrix products (library_rules), and BLAS-2's rank-1
# update (ger: torch.addr, 00_honest_addr_cublas_ger); nvjet kernels are
# cuBLASLt's GEMMs assembled at run time (library_kernels.RUNTIME_NAMED).
CUBLAS_KERNEL = re.compile(r"gemm|xmma|cutlass|cublas|splitKreduce|gemv|\bger\w*_kernel|Kernel2|trmm|trsm|syrk|herk|symm|hemm|^nvjet_",
                           re.IGNORECASE)  # fmt: skip
CUDNN_KERNEL = re.compile(
    r"cudnn|conv|fprop|dgrad|wgrad|implicit|winograd|fft|xmma|cutlass|nchw|nhwc", re.IGNORECASE
)
LIBRARY_PURPOSE = {"cublas": CUBLAS_KERNEL, "cudnn": CUDNN_KERNEL}
# PyTorch's kernels that are not compute: fills (torch.zeros, zero_, the judge's poison) and torch.cuda._sleep
# (the judge's fallback pad). Neutral only as PyTorch's binaries hold them; by whole words, so `nonzero_*`,
# `index_fill_kernel` or `ctc_loss_zero_padded_gradients` are not fills.
TORCH_NEUTRAL = re.compile(r"FillFunctor|\bfill_kernel\b|\bspin_kernel\b")
# The judge's own pad/flush kernel (candidate/pad.py), loaded from the judge's PTX at run time.
JUDGE_KERNELS = frozenset({"judge_pad_flush"})
# How Kineto names CUPTI memcpy/memset activities: "Memcpy DtoD (Device -> Device)", "Memset (Device)".
# A kernel cannot be named so (no symbol holds a space before a parenthesis).
COPY_ACTIVITY = re.compile(r"^(Memcpy [A-Za-z]+ \(.*\)|Memset \(.*\))$")
ORIGINS = {
    "pytorch": "PyTorch's own kernel",
    "library": "a library kernel not allowed here",
    "unlisted": "in no binary of your extension, PyTorch or an allowed library (code loaded at run time?)",
}


def submitted_names(module: Path) -> set[str]:
    """Names (mangled and demangled, normalised) of the kernels in the built extension's device code."""
    return {normalise(n) for k in kernels(module) for n in (k.mangled, k.demangled)}


@dataclass
class CoverageReport:
    submitted_us: float = 0.0
    library_us: float = 0.0
    neutral_us: float = 0.0
    copies_us: float = 0.0
    foreign: dict[str, float] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)  # foreign name -> key of ORIGINS
    calls: int = 0  # forward calls profiled

    @property
    def observed(self) -> bool:
        return self.submitted_us + self.library_us + self.neutral_us + self.copies_us + sum(self.foreign.values()) > 0

    @property
    def share(self) -> float:
        counted = self.submitted_us + self.library_us + sum(self.foreign.values())
        return 1.0 if counted == 0 else (self.submitted_us + self.library_us) / counted

    def describe_foreign(self, limit: int = 3) -> str:
        top = sorted(self.foreign.items(), key=lambda kv: -kv[1])[:limit]
        return ", ".join(f"{name[:80]} ({us:.0f} us, {ORIGINS[self.origins.get(name, 'unlisted')]})"
                         for name, us in top) or "nothing"  # fmt: skip

    def foreign_by_origin(self) -> dict[str, float]:
        by: dict[str, float] = {}
        for name, us in self.foreign.items():
            origin = self.origins.get(name, "unlisted")
            by[origin] = by.get(origin, 0.0) + us
        return {k: round(v, 1) for k, v in sorted(by.items())}

    def summary(self) -> dict[str, object]:
        return {
            "share_in_submitted_kernels": round(self.share, 4),
            "submitted_us": round(self.submitted_us, 1),
            "library_us": round(self.library_us, 1),
            "copies_us": round(self.copies_us, 1),
            "foreign_us": round(sum(self.foreign.values()), 1),
            "foreign_top": self.describe_foreign(),
            "foreign_us_by_origin": self.foreign_by_origin(),
            "calls_profiled": self.calls,
        }


def linked_libraries(imports: dict[str, set[str]]) -> set[str]:
    """Which allowed libraries ("cublas", "cudnn") the submission's own objects call (what the linker binds)."""
    symbols = {s for found in imports.values() for s in found}
    return {lib for lib in ("cublas", "cudnn") if any(s.startswith(lib) for s in symbols)}


def coverage_report(
    kernels_run: dict[str, float], submitted: Iterable[str], reference_ops: set[str], *, lists: KernelLists,
    calls: int = 0, libraries: set[str] | None = None,
) -> CoverageReport:  # fmt: skip
    """Classify the kernels that ran (name -> device microseconds) by the binary that holds each (see the
    module docstring): the extension's own (`submitted`, normalised names), PyTorch's and the allowed
    libraries' (`lists`, library_kernels.py).

    `libraries` (from `linked_libraries`): a library's kernels count as the candidate's only if its own
    objects call that library; cuBLAS kernels in a submission that never calls cuBLAS were launched by
    PyTorch (torch.mm from Python or C++) and are foreign. None: decided by the task alone."""
    allowed = {"cublas": bool(reference_ops & GEMM_OPS), "cudnn": bool(reference_ops & CONV_OPS)}
    allowed = {lib: ok and (libraries is None or lib in libraries) for lib, ok in allowed.items()}
    own = {normalise(n) for n in submitted}
    report = CoverageReport(calls=calls)
    for name, us in kernels_run.items():
        key = normalise(name)
        torch_kernel = lists.in_torch(name)
        library = None if torch_kernel else lists.library_of(name)
        if key in own and not torch_kernel:
            report.submitted_us += us
        elif COPY_ACTIVITY.match(name):
            report.copies_us += us
        elif library and allowed.get(library) and LIBRARY_PURPOSE[library].search(qualified_name(name)):
            report.library_us += us
        elif (torch_kernel and TORCH_NEUTRAL.search(name)) or name in JUDGE_KERNELS:
            report.neutral_us += us
        else:
            report.foreign[name] = report.foreign.get(name, 0.0) + us
            report.origins[name] = "pytorch" if torch_kernel else "library" if library else "unlisted"
    return report


def merge(runs: Iterable[dict[str, float]]) -> dict[str, float]:
    """Sum several profiled calls' kernel times by name."""
    total: dict[str, float] = {}
    for run in runs:
        for name, us in run.items():
            total[name] = total.get(name, 0.0) + float(us)
    return total


def binary_attribution(module: Path, torch_kernels: frozenset[str] = frozenset()) -> tuple[set[str], list[str]]:
    """(submitted kernel names, kernels named in PyTorch's or a library's namespace, or exactly like a
    kernel of PyTorch's own binaries: `torch_kernels`, `KernelLists.torch`) of the built library."""
    found = kernels(module)
    names = {normalise(n) for k in found for n in (k.mangled, k.demangled)}
    return names, reserved_kernels(found, torch_kernels)
