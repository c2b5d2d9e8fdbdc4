"""The judgment's CPU stage: static checks, the build, the built binary's checks, the candidate installed.

Runs in the parent (compilers in sandboxed children, trusted/build.py). Facts it establishes: which
kernels are the submission's own (from the built library's device code, `binary_attribution`, never from
source text), which symbols the extension imports (`check_imports`: what the linker binds, whatever the
source spelled), and that only `model_new.py` and the built `cuda_extension` reach the candidate's folder.
They cannot be forged because they are read from files the judge built itself before any candidate code
ran; the static checks on source text are defence in depth (readable reasons for common cheats).
"""

from __future__ import annotations

import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cuda_agent.judge.decide.coverage import (
    binary_attribution,
)
from cuda_agent.judge.decide.verdict import Status
from cuda_agent.judge.trusted.build import MODULE_NAME, build_extension
from cuda_agent.judge.trusted.device_code import reserved_reason
from cuda_agent.judge.trusted.freeze import ProcessTree
from cuda_agent.judge.trusted.pool import CandidateSlot
from cuda_agent.judge.trusted.python_syntax import syntax_problem
from cuda_agent.judge.trusted.static_checks import check_imports, check_kernel_sources, check_model_new
from cuda_agent.judge.trusted.static_checks import describe as describe_findings


class BuildStage:
    """The build stage (mixed into `Judgment`)."""

    def build(self) -> None:
        start = time.monotonic()
        model_new = self.submission / "model_new.py"
        if not model_new.is_file():
            raise self.fail(Status.REJECTED, "no model_new.py in the submission: write class ModelNew there")
        source = model_new.read_text(errors="replace")
        if problem := syntax_problem(source):  # the submission does not build: not a refusal of what it does
            raise self.fail(Status.COMPILE_ERROR, problem.reason, compile_log=problem.log)
        findings = check_model_new(source)
        # The source rules need the preprocessor (preprocess.py): run beside the compilers, which read the
        # same sources the same way, instead of before them. A finding still decides the verdict (over any
        # build result, with every finding named as before) and cancels the build at once.
        kernels = self.submission / "kernels"
        refused = threading.Event()
        if findings:
            refused.set()  # nothing to build for: the kernel rules still run, for the whole reason

        def static_checks() -> list:
            try:
                found = check_kernel_sources(kernels) if kernels.is_dir() else []
            except BaseException:
                refused.set()
                raise
            if found:
                refused.set()
            return found

        with ThreadPoolExecutor(1) as beside:
            static = beside.submit(static_checks)
            try:
                result = build_extension(kernels, self.scratch / "build", self.config.build, cancel=refused)
            finally:
                findings += static.result()  # its exception, if any, wins: the judgment fails closed
        if findings:
            raise self.fail(Status.REJECTED, f"static checks failed: {describe_findings(findings)}")
        self.checks["static"] = "passed"
        self.stages["build"] = time.monotonic() - start
        for step, seconds in result.step_seconds.items():  # parts of "build" (compile: all units at once)
            self.stages[f"build_{step}"] = seconds
        self.checks["build"] = result.record()
        if not result.ok:
            self.compile_log = result.log
            status = Status.TIMEOUT if result.timed_out else Status.COMPILE_ERROR
            first = next((ln for ln in result.log.splitlines() if "error" in ln.lower()), result.log[:300])
            raise self.fail(status, f"build failed: {first.strip()}", compile_log=result.log)
        self.adopt_build(result.module_path, result.imports)

    def adopt_build(self, module_file: Path, imports: dict[str, set[str]]) -> None:
        """Check the built extension and take it as the candidate: the end of `build()`, and all of it for
        an extension built from this submission on another node (service/ray_pool.py ships one from a CPU
        build task to a GPU lane); the binary checks then run again where it is judged."""
        self.imports = imports
        findings = check_imports(imports)  # what the linker binds, whatever the source spelled
        if findings:
            raise self.fail(Status.REJECTED, f"static checks failed: {describe_findings(findings)}")
        self.model_new_file = self.submission / "model_new.py"
        self.module_file = module_file
        # Attribution from the built binary (device_code.py), never from the source text; a kernel named
        # exactly like one of PyTorch's own binaries is reserved too (library_kernels.py).
        self.kernel_names, reserved = binary_attribution(module_file, self.kernel_lists().torch)
        self.checks["device_kernels"] = len({n for n in self.kernel_names if "(" in n or not n.startswith("_Z")})
        if reserved:
            raise self.fail(Status.REJECTED, f"kernels/ {reserved_reason(reserved)}")
        self.built = True

    def install(self, slot: CandidateSlot) -> None:
        """Put the candidate into its worker's folder: only these two files of the submission get there."""
        shutil.copyfile(self.model_new_file, slot.folder / "model_new.py")
        shutil.copyfile(self.module_file, slot.folder / f"{MODULE_NAME}.so")
        self.candidate_dir = slot.folder
        self.out_dir = slot.out_dir  # the only place the candidate writes
        self.checks["sandbox"] = slot.sandbox.protections
        # Frozen while baselines run, counted for leftovers: the worker and all it starts (freeze.py).
        self.candidate_tree = slot.tree or ProcessTree(slot.worker.pid, slot.folder)
        self.candidate_separate_user = slot.sandbox.uid is not None
