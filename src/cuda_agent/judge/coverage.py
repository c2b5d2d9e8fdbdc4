"""The coverage gate: where a forward's GPU time goes, by kernel name.

The op gate sees dispatched PyTorch ops; this sees kernels, so it also catches work that bypasses the
dispatcher (PyTorch's kernels called directly, libraries used beyond what the task allows, a decoy
kernel beside the real work). Submitted kernels are the `__global__` functions in kernels/; cuBLAS
kernels count as the candidate's where the reference has a matrix product, cuDNN ones where it has a
convolution; PyTorch's fill kernels (from torch.zeros) are neutral.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.judge.static_checks import CONV_OPS, GEMM_OPS

GLOBAL_FN = re.compile(r"__global__\s+(?:[\w:<>,\s*&]+?\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(")
CUBLAS_KERNEL = re.compile(r"gemm|xmma|cutlass|cublas|splitKreduce|gemv|Kernel2", re.IGNORECASE)
CUDNN_KERNEL = re.compile(
    r"cudnn|conv|fprop|dgrad|wgrad|implicit|winograd|fft|xmma|cutlass|nchw|nhwc", re.IGNORECASE
)
NEUTRAL_KERNEL = re.compile(r"FillFunctor|fill_kernel|zero_", re.IGNORECASE)


def kernel_names(kernels_dir: Path) -> set[str]:
    names: set[str] = set()
    for path in kernels_dir.rglob("*"):
        if path.is_file() and path.suffix in (".cu", ".cuh", ".h", ".hpp", ".inl"):
            names.update(GLOBAL_FN.findall(path.read_text(errors="replace")))
    names.discard("__launch_bounds__")
    return names


@dataclass
class CoverageReport:
    submitted_us: float = 0.0
    library_us: float = 0.0
    neutral_us: float = 0.0
    foreign: dict[str, float] = field(default_factory=dict)

    @property
    def observed(self) -> bool:
        return self.submitted_us + self.library_us + self.neutral_us + sum(self.foreign.values()) > 0

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
            "foreign_us": round(sum(self.foreign.values()), 1),
            "foreign_top": self.describe_foreign(),
        }


def coverage_report(
    kernels: dict[str, float], submitted: set[str], reference_ops: set[str]
) -> CoverageReport:
    gemm_allowed = bool(reference_ops & GEMM_OPS)
    conv_allowed = bool(reference_ops & CONV_OPS)
    words = [re.compile(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])") for n in submitted]
    report = CoverageReport()
    for name, us in kernels.items():
        if any(w.search(name) for w in words):
            report.submitted_us += us
        elif (gemm_allowed and CUBLAS_KERNEL.search(name)) or (conv_allowed and CUDNN_KERNEL.search(name)):
            report.library_us += us
        elif NEUTRAL_KERNEL.search(name):
            report.neutral_us += us
        else:
            report.foreign[name] = report.foreign.get(name, 0.0) + us
    return report
