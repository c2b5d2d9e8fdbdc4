"""The coverage gate of a judgment: GPU time of the calls that count, attributed by the built binary.

Runs in the parent. Facts it establishes: the share of forward GPU time in the submission's own kernels
(or allowed libraries), over every verification call and every timed round the timing stage chose to
trace (at random, after the round's inputs were drawn; decide/coverage.py classifies each kernel by the
binary that holds it: the extension, PyTorch's libraries, cuBLAS/cuDNN, read by library_kernels.py). The kernel list is
CUPTI evidence gathered in the candidate's process, so it is a **claim**: a candidate that does not touch
the judge's code there cannot hide PyTorch's kernels from it, but one that patches `kernel_trace` (issue 12
class 1) can report its own kernel names. Defence in depth against that attacker, a fact against the
others; docs/design/trust_boundary.md, "What is still a claim".
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from cuda_agent.judge.decide.coverage import (
    CoverageReport,
    coverage_report,
    linked_libraries,
    merge,
)
from cuda_agent.judge.decide.verdict import Status
from cuda_agent.judge.trusted.authkey import judge_key
from cuda_agent.judge.trusted.library_kernels import KernelLists, ListCache, kernel_lists
from cuda_agent.judge.trusted.sandbox import candidates_separated
from cuda_agent.judge.trusted.static_checks import CONV_OPS, GEMM_OPS


def judge_kernel_lists(libraries: Iterable[str], cache_dir: Path | None, separate: bool | None) -> KernelLists:
    """`kernel_lists` with the judge's cache policy: on disk under the machine key where candidates run as
    another user (`separate`; None: as the sandbox probe found, if it ran), else in memory only."""
    if separate is None:
        separate = candidates_separated()
    secret, where = judge_key(bool(separate))
    root = cache_dir / "kernel-lists" if cache_dir else None
    return kernel_lists(libraries, ListCache(secret, root, persistent=bool(separate) and where.startswith("machine")))


class CoverageStage:
    """The coverage gate stages (mixed into `Judgment`)."""

    def kernel_lists(self, libraries: Iterable[str] = ()) -> KernelLists:
        """PyTorch's kernels and those of `libraries` (library_kernels.py): cached on disk under the machine
        key where candidates run as another user, else kept in this process's memory only."""
        lists = judge_kernel_lists(libraries, self.config.cache_dir, getattr(self, "candidate_separate_user", None))
        self.checks["kernel_lists"] = lists.summary()
        return lists

    def coverage_lists(self) -> KernelLists:
        """The lists a coverage report of this submission needs: cuBLAS only where the task has a matrix
        product and the submission calls cuBLAS, cuDNN likewise for a convolution."""
        cached = getattr(self, "_coverage_lists", None)
        if cached is None:
            allowed = {"cublas": bool(self.reference_ops & GEMM_OPS), "cudnn": bool(self.reference_ops & CONV_OPS)}
            cached = self._coverage_lists = self.kernel_lists(lib for lib in linked_libraries(self.imports) if allowed[lib])
        return cached

    def check_coverage(self, traced: list[dict[str, float]]) -> None:
        """Most GPU time of the verification calls (every one was traced) must be in the submitted kernels
        (cuBLAS/cuDNN where the task has them), attributed by the built binary (coverage.py)."""
        report = coverage_report(merge(traced), self.kernel_names, self.reference_ops, calls=len(traced),
                                 libraries=linked_libraries(self.imports), lists=self.coverage_lists())  # fmt: skip
        self.checks["coverage"] = report.summary()
        self._gate_coverage(report, "forward")

    def gate_timed_round(self, reply: dict, calls: int) -> None:
        """A traced round of timed calls (chosen by the timing stage after the round's inputs were drawn,
        timing_stage.py): a submission honest on the verification calls and calling PyTorch (or nothing)
        on timed calls is seen here. A reply without kernels is a round that ran none of them."""
        kernels = reply.get("kernels")
        report = coverage_report(kernels if isinstance(kernels, dict) else {}, self.kernel_names,
                                 self.reference_ops, calls=calls, libraries=linked_libraries(self.imports),
                                 lists=self.coverage_lists())  # fmt: skip
        self.checks["coverage_timed"] = report.summary()
        if report.submitted_us + report.library_us + report.copies_us <= 0:
            raise self.fail(Status.REJECTED, "a round of timed calls ran none of your kernels (only "
                            f"{report.describe_foreign()}): every call must compute its output")  # fmt: skip
        self._gate_coverage(report, "timed calls'")

    def _gate_coverage(self, report: CoverageReport, what: str) -> None:
        if not report.observed:
            raise self.fail(Status.RUNTIME_ERROR, f"the coverage gate saw no GPU kernels in {what} (profiler "
                            "unavailable, or forward launches nothing)")  # fmt: skip
        if report.share < self.config.min_coverage:
            raise self.fail(
                Status.REJECTED,
                f"only {100 * report.share:.0f}% of {what} GPU time is in your kernels; the rest is in "
                f"{report.describe_foreign()}: implement the work in kernels/",
            )
