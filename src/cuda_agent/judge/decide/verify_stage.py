"""The judgment's verification stage: the candidate loaded, run on every input set, compared, checked.

Runs in the parent. Facts it establishes: each verification output matches the reference (decided by the
reference worker on the handed-over bytes; the candidate only computes), the same input gives the same
output (a repeat of set 1 from a fresh draw), the outputs came from the candidate worker's own buffers
(`_owns`: a `/proc/<its pid>/fd/N` path, checked here), GPU memory held (NVML from outside, else the
device-wide drop the reference measures), and no thread or process outlives a call (counted from /proc,
outside the candidate). Then the low-bit response check's two sets (trusted/response_probe.py), each put
in the candidate's input folder just before its call (linked from where the preparation staged it, or
written by the reference), so the second is not readable while the first runs. Every comparison runs in
the reference worker while the candidate computes the next call. The op-gate report (`forbidden`) is a
claim from the candidate's process: it is defence in depth and a readable reason, backed by the coverage
gate's GPU evidence (coverage_stage.py).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cuda_agent.judge.common.channel import WorkerFailure, WorkerHandle
from cuda_agent.judge.common.judge_files import VARIANT_FILE
from cuda_agent.judge.decide.calls import _thread_count
from cuda_agent.judge.decide.verdict import Status
from cuda_agent.judge.trusted.gpumem import process_gpu_bytes
from cuda_agent.judge.trusted.lane_share import JudgeAlone


class VerifyStage:
    """The verification stage (mixed into `Judgment`)."""

    def load_candidate(self, cand: WorkerHandle, ref: WorkerHandle) -> None:
        start = time.monotonic()
        self.free_before = self._reference_call(ref, "free_memory", 60)["free"]
        self.choose_output_channel(ref, cand)
        loaded = self._candidate_call(
            cand, "load", self.config.startup_timeout_s, "loading the candidate",
            module_dir=str(self.candidate_dir), state_path=str(self.io_dir / "state.pt"),
            task_path=str(self.task_file),
        )  # fmt: skip
        self.refuse_captured(loaded, "loading the model")
        self.threads_after_load = _thread_count(cand.pid)
        self.checks["candidate_threads_after_load"] = self.threads_after_load
        self.stages["load"] = time.monotonic() - start

    def refuse_captured(self, reply: dict, when: str) -> None:
        """The capture gate's report (a claim: candidate/opgate.py CaptureGate; the replay is attributed too)."""
        if reply.get("captured"):
            ops = ", ".join(f"{k} x{v}" for k, v in sorted(dict(reply["captured"]).items())[:6])
            raise self.fail(Status.REJECTED, f"{when} captured PyTorch compute ops into a CUDA graph ({ops}): a "
                            "graph replayed in forward runs PyTorch's kernels; capture only your own kernels "
                            "(cuda_extension calls)")  # fmt: skip

    def choose_output_channel(self, ref: WorkerHandle, cand: WorkerHandle) -> None:
        """Shared memory when both workers can use it on this machine (probed with a secret nonce before
        any candidate code is loaded), else files."""
        nonce = secrets.randbits(62)
        reply = self._candidate_call(cand, "share_probe", 60, "opening its output buffers", nonce=nonce)
        path, reason = reply.get("shared_path"), str(reply.get("reason", ""))
        self.shared_outputs = False
        if isinstance(path, str) and self._owns(cand, path):
            read = self._reference_call(ref, "read_probe", 60, path=path)
            self.shared_outputs = read.get("values") == [nonce]
            reason = str(read.get("reason") or "the reference read other values")
        self.checks["outputs"] = "shared memory (sealed memfd)" if self.shared_outputs else f"files ({reason})"

    @staticmethod
    def _owns(cand: WorkerHandle, path: str) -> bool:
        """A shared buffer must be one of this candidate worker's own descriptors, nobody else's."""
        return re.fullmatch(rf"/proc/{cand.pid}/fd/\d+", path) is not None

    def handed_over(self, cand: WorkerHandle, reply: dict, file: Path) -> dict[str, Any]:
        """Where the reference reads the outputs of the call that gave `reply`."""
        if not self.shared_outputs:
            return {"path": str(file), "shared": False}
        path = reply.get("shared_path")
        if not isinstance(path, str) or not self._owns(cand, path):
            raise self.fail(Status.REJECTED, "the candidate worker handed over its outputs outside its own buffers")
        return {"path": path, "shared": True}

    def verify(self, ref: WorkerHandle, cand: WorkerHandle) -> None:
        """Run the input sets, then the low-bit pair's two changed sets; the reference compares output k
        while the candidate computes k + 1 (it takes one request at a time, so a call it must answer first,
        such as writing a changed set, settles the comparison in flight)."""
        start = time.monotonic()
        n = self.config.input_sets
        traced: list[dict[str, float]] = []  # the kernels of every verification call (coverage gate)
        # The five sets, then the first again from a fresh copy: the same input must give the same output.
        order = [*range(n), 0]
        changed = 2 if getattr(self, "response_sets", 0) else 0
        pending: tuple[str, str, str] | None = None  # (request id, label, command) of the comparison in flight
        response: list[dict] = []  # the low-bit pair's findings, from its second comparison
        weight: list[dict] = []  # the weight pair's, from the second ModelNew's comparison

        def settle() -> None:
            """Take the comparison in flight out of `pending`, then wait for it: a verdict it raises must
            not leave it there for the drain below, which would wait for a reply already read."""
            nonlocal pending, response, weight
            done, pending = pending, None
            if done:
                settled = self._settle_comparison(ref, done)
                response = settled.get("response") or response
                weight = settled.get("weight_response") or weight

        try:
            for run_index, set_index in enumerate(order):
                label = f"input set {set_index + 1}" if run_index < n else "the repeated input set 1"
                output_path = self.out_dir / f"outputs_{run_index}.tensors"
                while True:
                    reply = self._candidate_call(
                        cand, "run", self.config.forward_timeout_s, f"forward on {label}",
                        output_path=str(output_path), poison=True, shared=self.shared_outputs, trace=True,
                        **self.input_args(set_index),
                    )  # fmt: skip
                    if self.input_files or reply["input_print"] == self.input_prints[set_index]:
                        break
                    settle()  # the reference takes one request at a time
                    self.switch_to_input_files(ref, "inputs")
                if not traced:  # CUPTI starts its threads with the first traced call: count from here on
                    self.threads_after_load = max(self.threads_after_load, _thread_count(cand.pid))
                pending = self._checked_then_compared(
                    ref, cand, reply, traced, settle, ("compare", label, output_path), ref_index=set_index
                )
            for which in range(changed):
                label = f"the changed input set {'AB'[which]}"
                written = self.hand_changed(ref, which, settle)  # settles first where the reference writes
                output_path = self.out_dir / f"outputs_changed_{which}.tensors"
                try:
                    reply = self._candidate_call(
                        cand, "run", self.config.forward_timeout_s, f"forward on {label}",
                        output_path=str(output_path), poison=True, shared=self.shared_outputs, trace=True,
                        inputs_path=written["path"],
                    )  # fmt: skip
                finally:
                    Path(written["path"]).unlink(missing_ok=True)
                if reply["input_print"] != written["print"]:
                    raise self.fail(Status.REJECTED, f"the candidate worker reported other inputs than the file of {label}")
                pending = self._checked_then_compared(
                    ref, cand, reply, traced, settle, ("compare_changed", label, output_path), which=which
                )
            if changed and getattr(self, "variant_made", False):
                pending = self.run_variant(ref, cand, settle)
            settle()
        finally:
            if pending:  # the judgment ended with a comparison in flight: drain it or retire the worker
                try:
                    ref.receive(pending[2], pending[0], self.config.prepare_timeout_s)
                except WorkerFailure:
                    self.reference_slot.broken = True
        self.checks["verified_input_sets"] = n
        self.checks["repeat_determinism"] = "passed"
        self.checks["op_gate"] = "passed"
        if changed:
            worst = max(response, key=lambda f: abs(f["alignment"]), default=None)
            self.checks["low_bit_response"] = (
                f"passed (largest alignment {worst['alignment']}, missing share {worst['missing']})" if worst
                else "passed (no floating output to weigh)"
            )  # fmt: skip
        if weight:
            worst = max(weight, key=lambda f: abs(f["alignment"]))
            self.checks["weight_response"] = f"passed (largest alignment {worst['alignment']}, missing share {worst['missing']})"
        self.check_leftovers(cand, "its forward calls")
        self.check_coverage(traced)
        self.stages["verify"] = time.monotonic() - start

    def _checked_then_compared(
        self, ref: WorkerHandle, cand: WorkerHandle, reply: dict, traced: list[dict[str, float]],
        settle: Callable[[], None], what: tuple[str, str, Path], **target: Any,
    ) -> tuple[str, str, str]:
        """After a candidate call: its kernels noted, its op-gate report and GPU memory checked, the
        comparison in flight settled, and this call's comparison sent (returned as the one in flight)."""
        command, label, output_path = what
        traced.append(reply.get("kernels") or {})
        self.refuse_forbidden(reply)
        own = self.own_gpu_bytes(cand)
        if own is None:  # the fallback asks the reference: settle its comparison first
            settle()
        # Before comparing: a memory hog must not starve the reference worker.
        self.check_memory(ref, cand, own)
        settle()
        request = self._reference_send(
            ref, command, **target, **self.handed_over(cand, reply, output_path), atol=self.config.atol,
            rtol=self.config.rtol, aliases=reply.get("aliases"), precision_k=self.precision_k(),
        )  # fmt: skip
        return (request, label, command)

    def _links_changed(self) -> bool:
        """Whether the changed sets are linked in from where the preparation staged them (no reference
        call), rather than written by the reference before each call."""
        return bool(getattr(self, "staged_changed", None)) and bool(getattr(self, "candidate_separate_user", False))

    def hand_changed(self, ref: WorkerHandle, which: int, settle: Callable[[], None] = lambda: None) -> dict[str, Any]:
        """Changed set `which` put in the candidate's input folder just before its call: linked from where
        the reference staged it with its preparation (reference_response.py: a folder no candidate uid
        reads), else written by the reference now. Either way the other set is not where the candidate
        can read it while it runs."""
        if self._links_changed():
            staged, began, path = self.staged_changed, time.perf_counter(), self.io_dir / f"changed_{which}.tensors"
            linked = _link_in(staged[which]["path"], path)
            self._note_call("judge", "link_changed", began)
            if linked:
                self.checks["changed_sets"] = "staged with the preparation, linked in before each call"
                return {"path": str(path), "print": staged[which]["print"]}
        why = getattr(self, "staged_why", "")
        self.checks["changed_sets"] = "written by the reference before each call" + (f" ({why})" if why else "")
        settle()  # the reference answers one request at a time: a comparison in flight first
        return self._reference_call(ref, "write_changed", 60, which=which, workdir=str(self.io_dir))

    def run_variant(self, ref: WorkerHandle, cand: WorkerHandle, settle: Callable[[], None]) -> tuple[str, str, str]:
        """The weight pair (trusted/response_probe.py): changed set B again, run by a second ModelNew given
        the parameters' second point; both files put in the candidate's folder just before the call and
        removed after it. Returns the comparison sent (in flight)."""
        label = "the changed input set B, run by a second ModelNew whose parameters' lowest bits were moved"
        written = self.hand_changed(ref, 1, settle)
        state_path = self.io_dir / VARIANT_FILE
        output_path = self.out_dir / "outputs_variant.tensors"
        try:
            state_path = Path(self.hand_variant(ref, settle))
            reply = self._candidate_call(
                cand, "run_variant", self.config.startup_timeout_s + self.config.forward_timeout_s,
                f"a second ModelNew on {label}", state_path=str(state_path), inputs_path=written["path"],
                output_path=str(output_path), shared=self.shared_outputs,
            )  # fmt: skip
        finally:
            Path(written["path"]).unlink(missing_ok=True)
            state_path.unlink(missing_ok=True)
        self.refuse_captured(reply, "constructing a second ModelNew")
        if reply["input_print"] != written["print"]:
            raise self.fail(Status.REJECTED, f"the candidate worker reported other inputs than the file of {label}")
        return self._checked_then_compared(ref, cand, reply, [], settle, ("compare_variant", label, output_path))

    def _links_variant(self) -> bool:
        """Whether the weight pair's state file is linked in from where the preparation staged it."""
        return bool(getattr(self, "staged_variant", None)) and bool(getattr(self, "candidate_separate_user", False))

    def hand_variant(self, ref: WorkerHandle, settle: Callable[[], None]) -> str:
        """The parameters' second point put in the candidate's folder just before its call: linked from the
        reference slot's own folder where staged, else written by the reference now (after the comparison
        in flight: it answers one request at a time)."""
        path = self.io_dir / VARIANT_FILE
        if self._links_variant() and _link_in(self.staged_variant, path):
            return str(path)
        settle()
        return str(self._reference_call(ref, "write_variant", 60, workdir=str(self.io_dir))["path"])

    def refuse_forbidden(self, reply: dict) -> None:
        """The op gate's report of a call (a claim from the candidate's process; coverage_stage.py backs it)."""
        if reply["forbidden"]:
            ops = ", ".join(f"{k} x{v}" for k, v in sorted(reply["forbidden"].items()))
            raise self.fail(
                Status.REJECTED,
                f"forward ran PyTorch compute ops ({ops}); only allocation (torch.empty*), views and "
                "cuda_extension calls are allowed: implement these in your kernels",
            )

    def _settle_comparison(self, ref: WorkerHandle, pending: tuple[str, str, str]) -> dict:
        request, label, command = pending
        with self.timed("compare_wait"):  # what the pipelining did not hide
            verdict = self._reference_result(
                command, lambda: ref.receive(command, request, self.config.prepare_timeout_s)
            )
        self.note_error_ratio(verdict)  # refused ones too: the record shows how far off they were
        if not verdict["match"]:
            raise self.fail(Status.INCORRECT, f"wrong result on {label}: {verdict['reason']}")
        return verdict

    def check_memory(self, ref: WorkerHandle, cand: WorkerHandle, own: int | None = None, kept: int = 0) -> None:
        """GPU memory the candidate holds after a call: its own (NVML, context included) where NVML can
        tell, else the device-wide drop in free memory since before it was loaded; `kept`, what the judge
        itself asked it to keep (a timed round's calls), is allowed on top of the limit."""
        if own is not None:
            held, self.checks["gpu_memory_source"] = own, "nvml"
        else:  # device-wide delta since before the load
            held = self.free_before - self._reference_call(ref, "free_memory", 60)["free"]
            self.checks["gpu_memory_source"] = "device_free_delta"
        self.checks["candidate_gpu_memory_bytes"] = max(
            held, self.checks.get("candidate_gpu_memory_bytes", 0)
        )
        if held > self.config.candidate_gpu_memory_bytes + kept:
            raise self.fail(
                Status.RUNTIME_ERROR,
                f"the candidate holds {held / 2**30:.1f} GiB of GPU memory after its forward call (limit "
                f"{(self.config.candidate_gpu_memory_bytes + kept) / 2**30:.0f} GiB): free what you allocate",
            )

    def own_gpu_bytes(self, cand: WorkerHandle) -> int | None:
        """The candidate's own GPU memory by NVML, or None where NVML cannot name it; beside another
        judgment that is a reason to be judged again alone, since the fallback counts another's memory too."""
        own = process_gpu_bytes(cand.pid)
        if own is None and getattr(self, "lane_shared", False):
            raise JudgeAlone("NVML could not name the candidate's GPU memory beside another judgment")
        return own

    def check_memory_at_rest(self, ref: WorkerHandle, cand: WorkerHandle) -> None:
        """`check_memory` between calls with no comparison in flight: before the reference works on what a
        call left (a timed call's spot check, the baselines' warm-up after the candidate's). A candidate
        that kept the GPU full there ran the reference out of memory, a task_error that training does not
        count against it; now it is the candidate's runtime_error, by the verification calls' own rule. On
        top of that rule's limit: the timed rounds the judge asks it to keep, its last round's calls and the
        one before it still in its allocator's cache (decide/round_size.py)."""
        own = self.own_gpu_bytes(cand)
        if own is None:  # no reading of its own: the device-wide fallback would empty the reference's
            return  # allocator cache mid-timing (reference_machine.free_memory), so these checks are off
        plan = self.round_plan
        self.check_memory(ref, cand, own, kept=2 * plan.calls * (plan.call_bytes or 0))

    def note_error_ratio(self, verdict: dict) -> None:
        """The largest precision-audit statistic seen (the candidate's error in units of the honest allowance,
        precision.py), for the record; a comparison without a truth caps the reward (`no_precision_truth`)."""
        if verdict.get("no_truth") and self.config.precision_audit:
            self.no_precision_truth(f"none for {', '.join(map(str, verdict['no_truth']))[:80]} of a checked call")
        ratio = verdict.get("error_ratio")
        if isinstance(ratio, int | float):
            self.checks["precision_error_ratio"] = round(max(float(ratio), self.checks.get("precision_error_ratio", 0.0)), 3)

    def check_leftovers(self, cand: WorkerHandle, when: str) -> None:
        """No threads or processes may outlive a call: count them from /proc, outside the candidate."""
        threads = _thread_count(cand.pid)
        children = self.tree_of(cand).walk() - {cand.pid}  # setsid children and daemons too (freeze.py)
        baseline = self.threads_after_load
        self.checks[f"candidate_threads_after_{when.split()[-1]}"] = threads
        if children:
            raise self.fail(
                Status.REJECTED, f"the candidate left {len(children)} process(es) running after {when}"
            )
        if threads > baseline + self.config.thread_slack:
            raise self.fail(
                Status.REJECTED,
                f"the candidate started {threads - baseline} thread(s) that outlived {when}: all work must "
                "finish inside forward, on the current stream",
            )


def _link_in(staged: str, path: Path) -> bool:
    """A file the reference staged, put at `path` in the candidate's input folder: a hard link, a copy on
    another file system; False where it is gone (a slot cleaned up), for the reference to write it."""
    try:
        try:
            os.link(staged, path)
        except OSError:  # another file system
            shutil.copyfile(staged, path)
        return True
    except OSError:
        path.unlink(missing_ok=True)
        return False
