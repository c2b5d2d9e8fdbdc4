"""The judgment's reference stage: secret seeds, the reference worker prepared, inputs for each call.

Runs in the parent. Facts it establishes: the seeds of every verification set and warm-up set
(`secrets.randbits`, made here), which the candidate receives one at a time with the call that uses it;
the reference's outputs, the degeneracy and parameter audits and the precision evaluation (made by the
reference worker, a process that never runs candidate code, and only read here); the switch to input
files written by the reference when the candidate's draw differs. None of it can be forged: the seeds
never exist in the candidate's process before their call, and the reference's replies come from a
trusted process.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

from cuda_agent.judge.common.channel import WorkerHandle
from cuda_agent.judge.decide.reference_group import describe, group_key, start_group
from cuda_agent.judge.decide.round_size import round_size
from cuda_agent.judge.decide.verdict import Environment, Status
from cuda_agent.judge.trusted.pool import ReferenceSlot, WorkerPool
from cuda_agent.judge.trusted.sandbox import candidates_separated


def task_error_of(reply: dict[str, Any], atol: float, rtol: float) -> str | None:
    """Why the reference worker's preparation `reply` makes every judgment of the task a `task_error`, or
    None: the task keeps state, its output is degenerate, or it ignores an input. One function, so that the
    KernelBench memory table (scripts/kernelbench_memory.py) says what a judgment ends with by the judge's
    own rules instead of a copy of them."""
    if reply.get("stateful"):  # its output for the same inputs changes from call to call (trusted/stateful.py)
        return f"task keeps state between calls: {reply['stateful']}"
    if reply.get("degenerate"):  # trusted/degeneracy.py
        return (f"degenerate task: {', '.join(reply['degenerate'])} passes as the output on every input set "
                f"at atol={atol:g}, rtol={rtol:g}; the task cannot tell a right answer from a trivial one")  # fmt: skip
    if reply.get("input_problem"):  # the reference ignores an input (trusted/input_audit.py)
        return f"task ignores an input: {reply['input_problem']}"
    return None


class ReferenceStage:
    """The reference stage (mixed into `Judgment`)."""

    def prepare_reference(self, pool: WorkerPool, slot: ReferenceSlot) -> None:
        """Fresh secret seeds, inputs, weights and reference outputs for this judgment (GPU, locked)."""
        start = time.monotonic()
        self.reference_slot = slot
        if slot.warm_error:
            slot.broken = True
            raise self.fail(
                Status.RUNTIME_ERROR, f"the judge could not start its reference worker: {slot.warm_error}"
            )
        self.io_dir = self.scratch / "io"  # written by the reference worker, read by the candidate
        self.io_dir.mkdir()
        for path in (self.scratch, self.io_dir):
            path.chmod(0o755)  # readable by the sandbox user; writable only by the judge
        self.task_file = self.scratch / "model.py"
        self.task_file.write_text(self.task.source)
        key = group_key(self.task.digest, self.config)
        shareable = pool.candidates_share_no_place()
        group = slot.group if shareable else None
        serves = group is not None and group.serves(key)
        # Handing out a kept preparation is small; a preparation needs the earlier candidates' memory back.
        # Beside another judgment at depth 2; its worker registered (add_reference), so a writer may freeze it.
        with pool.gpu_lock(self.stages, beside_retirement=serves, reading=True, preemptible=True):
            if group is not None and serves:  # the reference worker kept it (reference_group.py)
                reply = group.hand_out(self.io_dir)
                self.input_seeds = list(group.input_seeds)
                self.environment = Environment(**slot.environment) if slot.environment else None
            else:
                slot.group = group = None
                reply = self._prepare(slot)
        self.stages["reference"] = time.monotonic() - start
        self._check_prepared(reply)
        if group is None and shareable:
            limit = self.config.reference_group_uses
            group = slot.group = start_group(key, reply, self.input_seeds, self.io_dir, slot.root, limit)
        self.checks["reference_preparation"] = describe(group) if group else "prepared for this judgment"

    def _prepare(self, slot: ReferenceSlot) -> dict:
        ref = slot.worker
        self.input_seeds = [secrets.randbits(62) for _ in range(self.config.input_sets)]
        reply = self._reference_call(
            ref, "prepare", self.config.prepare_timeout_s,
            task_path=str(self.task_file), workdir=str(self.io_dir), init_seed=secrets.randbits(62),
            input_seeds=self.input_seeds, timing_seed=secrets.randbits(62),
            atol=self.config.atol, rtol=self.config.rtol, precision_audit=self.config.precision_audit,
            perturb_parameters=self.config.perturb_parameters, audit_inputs=self.config.input_audit,
            mix_signs=self.config.sign_audit, kept_share=self.config.reference_kept_share,
            stage_dir=str(_stage_folder(slot)) if candidates_separated() else None,
            precision_k=self.config.precision_k,
        )  # fmt: skip
        if slot.environment is None:
            env = self._reference_call(ref, "environment", 60)
            env.pop("ok", None)
            slot.environment = env
        self.environment = Environment(**slot.environment)
        return reply

    def _check_prepared(self, reply: dict) -> None:
        if why := task_error_of(reply, self.config.atol, self.config.rtol):
            raise self.fail(Status.TASK_ERROR, why)
        self.checks["degeneracy_audit"] = "passed"
        tc = self.config.timing
        self.round_plan = round_size(tc.samples_per_round, reply.get("input_bytes"), reply.get("output_bytes"),
                                     reply.get("gpu_bytes"), tc.round_memory_share)  # fmt: skip
        if self.round_plan.reduced:
            self.checks["round_size"] = self.round_plan.describe()
        if reply.get("kept_sets") == 0:  # trusted/reference_memory.py
            self.checks["reference_outputs"] = (
                "made again from each input set's seed for its comparison (too large to keep for every set)"
            )
        self.checks["input_audit"] = reply.get("input_audit", {})
        self.checks["sign_audit"] = reply.get("sign_audit", {})  # trusted/sign_audit.py
        outliers = reply.get("outlier_audit", {})  # trusted/outlier_audit.py: only where an input qualifies
        if outliers.get("elements_per_output"):
            self.checks["outlier_audit"] = outliers
        self.reference_ops = set(reply["ops"])
        self.input_prints: list[str] = reply["input_prints"]
        self.checks["parameter_audit"] = reply.get("parameter_audit", {})
        self.checks["precision_audit"] = (
            f"{reply.get('precision', 'off')}, k = {self.config.precision_k:g}"
            if self.config.precision_audit else "off (tolerance only)"
        )  # fmt: skip
        if self.config.precision_audit and str(reply.get("precision", "")).startswith("none"):
            self.no_precision_truth(str(reply["precision"]).removeprefix("none: "))
        # Whether a seed reproduces the task's inputs, by the reference's own second draw (trusted): then a
        # candidate worker reporting other inputs for a seed is refused, not switched to input files.
        self.inputs_reproducible = bool(reply.get("reproducible"))
        response = reply.get("response_probe") or {}
        self.response_sets = int(response.get("sets", 0)) if self.config.precision_audit else 0
        # Written ahead by the reference where candidates run as another uid (reference_response.py), in
        # the reference slot's own folder: used only from there.
        staged = response.get("staged") if self.response_sets else None
        folder = _stage_folder(self.reference_slot)
        self.staged_changed: list[dict[str, Any]] | None = (
            staged if isinstance(staged, list) and len(staged) == 2
            and all(Path(str(entry.get("path"))).parent == folder for entry in staged) else None
        )  # fmt: skip
        self.checks["low_bit_response"] = (
            "pending" if self.response_sets else f"not made ({response.get('why', 'the precision audit is off')})"
        )  # fmt: skip
        self.staged_why = str(response.get("staged_why", ""))
        # The weight pair (trusted/response_probe.py): a second ModelNew on changed set B, its parameters'
        # lowest bits moved; its state file staged in the same folder as the changed sets, or written later.
        weights = (response.get("weights") or {}) if self.response_sets else {}
        self.variant_made = bool(weights.get("made"))
        staged_variant = str((weights.get("staged") or {}).get("path", ""))
        self.staged_variant = staged_variant if staged_variant and Path(staged_variant).parent == folder else None
        self.checks["weight_response"] = (
            "pending" if self.variant_made else f"not made ({weights.get('why', 'no low-bit response pair')})"
        )  # fmt: skip
        self.input_files = False  # inputs drawn from seeds by the candidate worker (inputs.py)
        self.checks["inputs"] = "drawn from secret seeds in each worker"

    def input_args(self, set_index: int) -> dict[str, Any]:
        if self.input_files:
            return {"inputs_path": str(self.io_dir / f"inputs_{set_index}.tensors")}
        return {"inputs_seed": self.input_seeds[set_index]}

    def warmup_args(self) -> dict[str, Any]:
        """Warm-up sets of their own: fresh seeds (or, in input-file mode, the first input file)."""
        if self.input_files:
            return {"warmup_path": str(self.io_dir / "inputs_0.tensors")}
        return {"warmup_seeds": [secrets.randbits(62) for _ in range(2)]}

    def precision_k(self) -> float | None:
        return self.config.precision_k if self.config.precision_audit else None

    def no_precision_truth(self, why: str) -> None:
        """No float64 truth of the reference could be made (trusted/truth.py): the precision audit cannot
        tell fp32 from lowered precision, so the judgment fails closed on speed (`precision_cap`): a correct
        submission gets reward 1 at most (docs/design/precision.md)."""
        self.precision_cap = (
            f"reward capped at 1: no float64 evaluation of the reference could be made ({why[:160]}), so the "
            "precision audit cannot tell a kernel computing in the task's precision from one that lowers it"
        )
        self.checks["precision_audit"] = f"none ({why[:160]}): reward capped at 1"

    def switch_to_input_files(self, ref: WorkerHandle, what: str) -> None:
        """The candidate worker drew other inputs than the reference, for a task whose get_inputs() a seed
        does not reproduce (the reference's own second draw of a set differed): the rest of this judgment
        uses input files the reference writes, and the caller runs its call again. Where a seed does
        reproduce the task's inputs, the candidate's worker changed its own draw: refused, since input files
        reach a timed round's set-up before the host clock starts (docs/design/trust_boundary.md)."""
        if getattr(self, "inputs_reproducible", False):
            raise self.fail(
                Status.REJECTED,
                f"the candidate worker reported other {what} than the task's get_inputs() draws from the seed it "
                "was given (the reference draws the same ones from it every time): the judge's input draw in "
                "the candidate's process was changed",
            )
        self._reference_call(ref, "save_inputs", self.config.prepare_timeout_s, workdir=str(self.io_dir))
        self.reference_slot.group = None  # input files are this candidate's: the group ends (reference_group.py)
        self.input_files = True
        self.checks["inputs"] = f"files written by the reference (the candidate worker drew different {what})"


def _stage_folder(slot: ReferenceSlot) -> Path:
    """Where the reference stages the low-bit pair's changed sets: its slot's own folder (mode 700), the
    one place the parent takes them from (reference_response.stage_changed)."""
    return slot.root / "changed"
