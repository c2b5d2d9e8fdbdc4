"""The coverage gate: where a forward's GPU time goes, by the binary that holds each kernel.

The op gate sees dispatched PyTorch ops inside the candidate's process, where the candidate can reach it;
this sees the kernels that ran on the GPU, so it also catches work that bypasses the dispatcher (PyTorch's
kernels called directly, libraries used beyond what the task allows, a decoy kernel beside the real work).

Attribution (trust boundary): a kernel is *submitted* only if a function of that exact name is an entry of
the extension's own device code, read by the judge from the built library (device_code.py) before the
candidate runs: never from source text, which comments, macros, `.inc` files and declarators fooled. A
submission may not define kernels in PyTorch's or a library's namespaces (`reserved_kernels`), so a kernel
ATen launches can never carry a submitted name. cuBLAS kernels count as the candidate's where the reference
has a matrix product, cuDNN ones where it has a convolution, and only if the submission's own objects call
that library (the symbols they import): never one in PyTorch's namespaces, never one ATen launched for a
submission that does not link the library itself. Fills,
memsets and memory copies are neutral (copies are data movement, not foreign compute: a concatenation may
be all copies); everything else is foreign.

The kernel lists come from profiled calls: every verification call, and timed rounds the parent chooses
at random after each round's inputs were drawn (decide/timing_stage.py); what still tells a traced round
from the others in the candidate's process is listed in docs/design/trust_boundary.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.judge.trusted.device_code import TORCH_NAMESPACES, kernels, qualified_name, reserved_kernels
from cuda_agent.judge.trusted.static_checks import CONV_OPS, GEMM_OPS

# cuBLAS's kernels for matrix products: GEMM/GEMV families and BLAS-3's triangular and symmetric products
# (`trmm_left_kernel_core`, `magma_lds128_strmm_kernel`, `trsm_left_kernel`, `syherk_kernel_core`), which
# library_rules allows as matrix products.
CUBLAS_KERNEL = re.compile(r"gemm|xmma|cutlass|cublas|splitKreduce|gemv|Kernel2|trmm|trsm|syrk|herk|symm|hemm",
                           re.IGNORECASE)  # fmt: skip
CUDNN_KERNEL = re.compile(
    r"cudnn|conv|fprop|dgrad|wgrad|implicit|winograd|fft|xmma|cutlass|nchw|nhwc", re.IGNORECASE
)
# Fills (torch.zeros, the judge's poison) and the judge's own timing kernels (its pad/flush kernel, or the
# torch.cuda._sleep + zero_() fallback) in a traced round of timed calls.
NEUTRAL_KERNEL = re.compile(r"FillFunctor|fill_kernel|zero_|^judge_pad_flush$|at::cuda::.*spin_kernel", re.IGNORECASE)
COPY_ACTIVITY = re.compile(r"^(Memcpy|Memset)\b")  # how Kineto names CUPTI memcpy/memset activities


def normalise(name: str) -> str:
    """Kernel names compared without whitespace and without a leading `void` (the return type the Itanium
    demangler prints for templates): demanglers differ in these at most."""
    return re.sub(r"\s+", "", re.sub(r"^\s*void\s+", "", name))


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
        return ", ".join(f"{name[:80]} ({us:.0f} us)" for name, us in top) or "nothing"

    def summary(self) -> dict[str, float | str]:
        return {
            "share_in_submitted_kernels": round(self.share, 4),
            "submitted_us": round(self.submitted_us, 1),
            "library_us": round(self.library_us, 1),
            "copies_us": round(self.copies_us, 1),
            "foreign_us": round(sum(self.foreign.values()), 1),
            "foreign_top": self.describe_foreign(),
            "calls_profiled": self.calls,
        }


def linked_libraries(imports: dict[str, set[str]]) -> set[str]:
    """Which allowed libraries ("cublas", "cudnn") the submission's own objects call (what the linker binds)."""
    symbols = {s for found in imports.values() for s in found}
    return {lib for lib in ("cublas", "cudnn") if any(s.startswith(lib) for s in symbols)}


def coverage_report(
    kernels_run: dict[str, float], submitted: Iterable[str], reference_ops: set[str], calls: int = 0,
    libraries: set[str] | None = None,
) -> CoverageReport:  # fmt: skip
    """Classify the kernels that ran (name -> device microseconds) against the extension's own kernels.

    `libraries` (from `linked_libraries`): a library's kernels count as the candidate's only if its own
    objects call that library; cuBLAS kernels in a submission that never calls cuBLAS were launched by
    PyTorch (torch.mm from Python or C++) and are foreign. None: decided by the task alone."""
    gemm_allowed = bool(reference_ops & GEMM_OPS) and (libraries is None or "cublas" in libraries)
    conv_allowed = bool(reference_ops & CONV_OPS) and (libraries is None or "cudnn" in libraries)
    own = {normalise(n) for n in submitted}
    report = CoverageReport(calls=calls)
    for name, us in kernels_run.items():
        in_torch = qualified_name(name).startswith(TORCH_NAMESPACES)
        if normalise(name) in own:
            report.submitted_us += us
        elif COPY_ACTIVITY.match(name):
            report.copies_us += us
        elif not in_torch and (
            (gemm_allowed and CUBLAS_KERNEL.search(name)) or (conv_allowed and CUDNN_KERNEL.search(name))
        ):
            report.library_us += us
        elif NEUTRAL_KERNEL.search(name):
            report.neutral_us += us
        else:
            report.foreign[name] = report.foreign.get(name, 0.0) + us
    return report


def merge(runs: Iterable[dict[str, float]]) -> dict[str, float]:
    """Sum several profiled calls' kernel times by name."""
    total: dict[str, float] = {}
    for run in runs:
        for name, us in run.items():
            total[name] = total.get(name, 0.0) + float(us)
    return total


def binary_attribution(module: Path) -> tuple[set[str], list[str]]:
    """(submitted kernel names, kernels named in PyTorch's or a library's namespace) of the built library."""
    found = kernels(module)
    names = {normalise(n) for k in found for n in (k.mangled, k.demangled)}
    return names, reserved_kernels(found)
