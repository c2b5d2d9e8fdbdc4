"""The coverage gate of a judgment: GPU time of the calls that count, attributed by the built binary.

Runs in the parent. Facts it establishes: the share of forward GPU time in the submission's own kernels
(or allowed libraries), over every verification call and one round of timed calls made like every other
(decide/coverage.py classifies). The kernel list is CUPTI evidence gathered in the candidate's process,
so it is a claim; what makes it hard to forge is that it must name kernels of the extension's own
device code for most of the time, while the outputs of the same calls are checked by the reference.
"""

from __future__ import annotations

import secrets

from cuda_agent.judge.common.channel import WorkerHandle
from cuda_agent.judge.decide.coverage import (
    CoverageReport,
    coverage_report,
    linked_libraries,
    merge,
)
from cuda_agent.judge.decide.verdict import Status


class CoverageStage:
    """The coverage gate stages (mixed into `Judgment`)."""

    def check_coverage(self, traced: list[dict[str, float]]) -> None:
        """Most GPU time of the verification calls (every one was traced) must be in the submitted kernels
        (cuBLAS/cuDNN where the task has them), attributed by the built binary (coverage.py)."""
        report = coverage_report(merge(traced), self.kernel_names, self.reference_ops, calls=len(traced),
                                 libraries=linked_libraries(self.imports))  # fmt: skip
        self.checks["coverage"] = report.summary()
        self._gate_coverage(report, "forward")

    def check_timed_coverage(self, ref: WorkerHandle, cand: WorkerHandle) -> None:
        """One more round of timed calls, made exactly like the others (fresh inputs, the same sampler and
        arguments), traced: a submission honest on the verification calls and calling PyTorch (or nothing)
        on timed calls is seen here. Its samples are not used (tracing costs time); its outputs are checked
        like every round's."""
        tc = self.config.timing
        with self.timed("coverage"):
            draw = getattr(self, "draw_round", None)  # rounds with fresh content for every call
            if draw is not None:
                draw(ref, cand)
            reply = self._candidate_call(cand, "profile_round", self.config.timing_timeout_s, "timing",
                                         samples=tc.samples_per_round,
                                         keep=secrets.randbelow(tc.samples_per_round))  # fmt: skip
            check = getattr(self, "check_round", None) or getattr(self, "spot_check", None)
            if check is not None:
                check(ref, cand)
        report = coverage_report(reply.get("kernels") or {}, self.kernel_names, self.reference_ops,
                                 calls=tc.samples_per_round, libraries=linked_libraries(self.imports))  # fmt: skip
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
