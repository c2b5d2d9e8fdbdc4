"""The trusted worker: runs the reference, makes inputs, compares outputs, times the baselines (the timing
commands in reference_timing.py).

It never imports candidate code; candidate outputs reach it only as tensor files, bounds-checked as
untrusted (tensorfile.py). Inputs are not sent: both workers draw them from the same seeds (inputs.py).
Started by the judge as `python -I -m cuda_agent.judge.trusted.reference_worker FD`.

Facts of the reward established here, outside the candidate's reach (docs/design/trust_boundary.md):
- the reference outputs, for the verification sets and for every timed call the parent chose to check
  (drawn again here from that call's seed, which the candidate held only for the round it ran);
- the parameter audit (audit.py): constant state varied, every parameter scaled until zeroing it fails
  the comparison, then moved to a random generic point (perturb.py); the input audit (input_audit.py):
  inputs made to matter on every draw, a task that ignores one refused; a few large elements planted in
  an input that a global loss reduces (outlier_audit.py); the degeneracy audit (degeneracy.py);
- the comparison itself: values within the tolerance by logical index, boolean and integer outputs exact
  except at cuts (cuts.py), no memory shared that the reference's output does not share (layout.py),
  and the precision audit against the reference with every op promoted to float64 (truth.py, precision.py);
- the low-bit response check (response_probe.py): a pair of sets that differ only in bits a lowered
  precision drops, made from a base set the candidate never sees, and the candidate's change between them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from cuda_agent.judge.candidate import aliasing
from cuda_agent.judge.candidate.inputs import draw_inputs, fingerprint
from cuda_agent.judge.candidate.opgate import ALLOWED_OPS, OpGate
from cuda_agent.judge.candidate.sampler import Sampler
from cuda_agent.judge.common import math_policy, tensorfile
from cuda_agent.judge.common.channel import serve
from cuda_agent.judge.common.shared_outputs import SharedOutputReader, UnsafeBuffer
from cuda_agent.judge.trusted import (
    cuts,
    degeneracy,
    input_audit,
    outlier_audit,
    perturb,
    precision_bound,
    reference_memory,
    response_probe,
    sample_standin,
    sign_audit,
    stateful,
    truth,
)
from cuda_agent.judge.trusted.audit import make_parameters_matter, vary_constant_state
from cuda_agent.judge.trusted.compare import Tolerance, describe
from cuda_agent.judge.trusted.compile_builds import compile_build, fresh_compiles
from cuda_agent.judge.trusted.degeneracy import POLYNOMIAL_OPS
from cuda_agent.judge.trusted.output_verdict import judge_outputs
from cuda_agent.judge.trusted.reference_files import InputFiles
from cuda_agent.judge.trusted.reference_machine import MachineCommands
from cuda_agent.judge.trusted.reference_response import ResponseCheck
from cuda_agent.judge.trusted.reference_timing import BaselineTiming
from cuda_agent.task import Task, build_model, check_inputs, flatten_tensors, import_task_module, tensor_bytes

# Warm-up calls rotate through distinct input sets of up to this many bytes in all (beyond L2 many times
# over); timed rounds draw every call's inputs inside the round, as the candidate's do.
TIMING_SET_BYTES = 512 << 20
MAX_TIMING_SETS = 8
# A candidate's shared output buffer may be this much larger than the expected outputs need (headers,
# rounding to 2 MB), and a probe buffer this large.
SHARED_SLACK_BYTES = 16 << 20
PROBE_BYTES = 16 << 20

__all__ = ["ReferenceWorker", "compile_build", "fresh_compiles", "judge_outputs", "main", "vary_constant_state"]


class ReferenceWorker(BaselineTiming, ResponseCheck, MachineCommands, InputFiles):
    def __init__(self) -> None:
        self.module: Any = None
        self._judgments = 0
        self.model: Any = None
        # Per input set; None where they are too large to keep and are made again to compare (reference_memory.py).
        self.outputs: list[list[torch.Tensor] | None] = []
        self.timing_sets: list[list[Any]] = []
        self.samplers: dict[str, Sampler] = {}
        self.input_seeds: list[int] = []
        self.input_prints: list[str] = []
        self.aliases: list[list[list[str]]] = []  # per input set, per output: what it shares memory with
        self.exact_outputs: list[list[truth.Truth | None] | None] = []  # the precision audit's truths
        self.cut_alternatives: list[list[cuts.Alternatives | None] | None] = []  # per input set (cuts.py)
        self.has_cuts, self.tol = False, Tolerance()
        self.exact: truth.TruthModel | None = None
        self.round_sets: dict[int, list[Any]] = {}  # timed inputs kept by seed (input-file mode only)
        self.input_transforms: list[Any] | None = None  # the input audit's, applied to every draw
        self.signs = sign_audit.SignAudit()  # inputs given random signs in every draw (sign_audit.py)
        self.outliers = outlier_audit.OutlierAudit()  # elements scaled up in every draw (outlier_audit.py)
        self.perturbation = perturb.Perturbation()
        self.inputs_audit = input_audit.InputAudit()
        self.reproducible = False
        self.shared = SharedOutputReader()
        self.shared_limit = PROBE_BYTES
        self.sizes: dict[str, int] = {}  # what the preparation learnt of the task's sizes (reference_memory.py)
        self.response: response_probe.Pair | None = None  # the low-bit response check's pair of sets

    def prepare(self, *args: Any, **kw: Any) -> dict[str, Any]:
        """`_prepare`, with running out of GPU memory said in one line: what the task needed so far and what
        the GPU has (reference_memory.py); the parent makes it the task's `task_error`."""
        self.sizes = {}
        with reference_memory.said_in_one_line(self.sizes, self.end_judgment):
            return self._prepare(*args, **kw)

    def _prepare(
        self, task_path: str, workdir: str, init_seed: int, input_seeds: list[int], timing_seed: int,
        atol: float, rtol: float, precision_audit: bool = True, perturb_parameters: bool = True,
        audit_inputs: bool = True, kept_share: float = reference_memory.KEPT_SHARE, mix_signs: bool = True,
        stage_dir: str | None = None, precision_k: float = precision_bound.DEFAULT_K,
    ) -> dict[str, Any]:  # fmt: skip
        math_policy.pin()  # fp32 means fp32 for the reference, the baselines and the truth (no TF32 in cuDNN either)
        self.end_judgment()  # a kept worker serves many judgments of its task: nothing of the last may survive
        source = Path(task_path).read_text()
        task = Task(name=Path(task_path).stem, source=source, path=Path(task_path))
        # Under a name of its own in sys.modules: dynamo guards the globals of the functions it inlines by
        # importing their module by name, and compile builds trace through an entry function (compile_build)
        # into the model's forward, which fails with "No module named 'reference_model'" otherwise.
        self._judgments += 1
        self.module = import_task_module(task, f"cuda_agent_reference_{os.getpid()}_{self._judgments}")
        sys.modules[self.module.__name__] = self.module
        out = Path(workdir)
        torch.manual_seed(init_seed)
        model, init_inputs = build_model(self.module, task.name)
        varied = vary_constant_state(model)
        self.model = model.cuda().eval()

        tol = self.tol = Tolerance(atol, rtol)
        self.input_seeds, self.input_prints = list(input_seeds), []
        first = check_inputs(self._draw(input_seeds[0]), task.name)  # the others only as the audit reads them
        self.sizes["one input set"] = tensor_bytes(first)
        # Every parameter must matter at the tolerance (scaled up until zeroing it fails) and sit at a
        # generic point (no initialiser's structure survives), and every input the reference reads must
        # matter on every draw, before the state (and the inputs' transforms) go to the candidate.
        # The float64 truth, made now: the outlier audit's global probe reads it too (global_probe.py).
        self.exact = truth.TruthModel(self.model) if precision_audit else None
        audit = self._audit_state_and_inputs(first, tol, init_seed, perturb_parameters, audit_inputs, kept_share,
                                             precision_audit and mix_signs) | {"varied": varied}  # fmt: skip
        self._aim_pairs(precision_audit, kept_share)  # the weight pair's loaded point (reference_response.py)
        # A global input no few elements move: the reference on a sample of it is a stand-in (sample_standin.py).
        samples = sample_standin.samplings(first, self.outliers.refused)
        del first  # the sets below are drawn one at a time, with the audit's transforms (reference_memory.py)
        torch.save({"state_dict": self.model.state_dict(), "init_inputs": init_inputs,
                    "input_transforms": self.input_transforms, "input_signs": self.signs.signs,
                    "input_outliers": self.outliers.outliers}, out / "state.pt")  # fmt: skip

        degeneracy_audit = degeneracy.Audit(tol)
        specs: list[dict[str, Any]] = []
        recorder = OpGate(poison=False)
        keep, no_truth = True, False
        for index, seed in enumerate(input_seeds):
            inputs = check_inputs(self._draw(seed), task.name)
            self.input_prints.append(fingerprint(inputs))  # before forward: a task may modify its inputs
            pristine = degeneracy.snapshot(inputs)  # the audits see the inputs as drawn, not as updated
            exact = self.exact.outputs(inputs) if self.exact else None
            before = stateful.snapshot(self.model) if index == 0 else None  # what forward may change
            with torch.no_grad(), recorder if index == 0 else contextlib.nullcontext():
                result = self.model(*inputs)
            torch.cuda.synchronize()
            raw = flatten_tensors(result)
            if not raw:
                raise ValueError("Model.forward returned no tensors")
            self.aliases.append(self._reference_aliases(raw, inputs))
            outputs = [reference_memory.private_copy(t) for t in raw]
            del result, raw  # the private copies stand for them (a set's peak: docs/design/memory.md)
            if before is not None and (kept_state := stateful.repeat_problem(self.model, before, outputs, lambda s=seed: (
                    self._forward_again(s)), tol)):  # fmt: skip
                return {"stateful": kept_state}  # the task's error (stateful.py): nothing below means anything
            exact = self.exact.confirm(exact, outputs, tol, pristine) if self.exact else None  # truth_rows.py
            no_truth = no_truth or (self.exact is not None and exact is None)
            alternatives = None
            if index == 0 or self.has_cuts:
                alternatives = self._cut_alternatives(pristine, outputs, tol)
                self.has_cuts = alternatives is not None
            if index == 0:  # every set's outputs kept, or none (each made again from its seed to compare)
                self.shared_limit = 2 * tensor_bytes(outputs) + SHARED_SLACK_BYTES
                keep = reference_memory.keep_decision(outputs, exact, len(input_seeds), kept_share, lambda s=seed: (
                    fingerprint(self._draw(s)) == self.input_prints[0]), self.sizes)  # fmt: skip
            self.outputs.append(outputs if keep else None)
            self.exact_outputs.append(exact if keep else None)
            self.cut_alternatives.append(alternatives if keep else None)
            specs = [describe(t) for t in outputs]
            low_order = not set(recorder.seen) <= (POLYNOMIAL_OPS | ALLOWED_OPS)
            sampled = sample_standin.passing(self.model, pristine, outputs, exact, tol, precision_k, samples)
            degeneracy_audit.add(outputs, pristine, low_order, also=sampled)
            del pristine, inputs, outputs, exact, alternatives
        # Does a seed reproduce this task's inputs? The first set drawn again, here, where nothing can meddle:
        # if it does, a candidate worker that reports other inputs for a seed changed its own draw (a reported
        # difference would otherwise send the judgment to input files, which reach a candidate's round set-up
        # before the clock: the one mode where a round's content exists before its clock).
        reproducible = fingerprint(self._draw(input_seeds[0])) == self.input_prints[0] if input_seeds else False
        self.reproducible = reproducible
        reference_memory.check_remakeable(keep, reproducible, self.sizes)
        response = self._prepare_response(keep, tol, kept_share, stage_dir)
        # The baselines' warm-up sets (eager, torch.compile): they never reach the candidate, and timed
        # rounds draw inputs of their own (`_draw`), as the candidate's do.
        first = self._draw(timing_seed)
        input_bytes = tensor_bytes(first)
        n_sets = max(1, min(MAX_TIMING_SETS, TIMING_SET_BYTES // max(1, input_bytes)))
        self.timing_sets = [first, *(self._draw(timing_seed + k) for k in range(1, n_sets))]
        # A trivial answer that passes on every input set means the task cannot tell right from wrong.
        always = degeneracy_audit.always()
        precision_state = (
            "off" if self.exact is None else f"none: {self.exact.problem}" if no_truth else self.exact.name
        )  # fmt: skip
        return {
            "outputs": specs, "degenerate": always, "timing_sets": n_sets, "input_bytes": input_bytes,
            "output_bytes": self.sizes.get("its outputs"), "gpu_bytes": reference_memory.gpu_total_bytes(),
            "ops": sorted(recorder.seen), "input_prints": self.input_prints, "reproducible": reproducible,
            "parameter_audit": audit, "input_audit": self.inputs_audit.report(), "sign_audit": self.signs.report(),
            "outlier_audit": self.outliers.report(),
            "input_problem": self.inputs_audit.problem(),
            "precision": precision_state, "response_probe": response,
            "kept_sets": len(input_seeds) if keep else 0,  # else each set's output is made again to compare
        }  # fmt: skip

    def _forward_again(self, seed: int) -> list[torch.Tensor]:
        """The model on the input set of `seed`, drawn afresh (stateful.py's repeat)."""
        with torch.no_grad():
            return [t.clone() for t in flatten_tensors(self.model(*self._draw(seed)))]

    def _audit_state_and_inputs(
        self, first: list[Any], tol: Tolerance, seed: int, perturb_state: bool, audit_inputs: bool, share: float,
        mix_signs: bool = True,
    ) -> dict[str, Any]:  # fmt: skip
        """The parameters first (scaled until each matters, then moved to a generic point: perturb.py), then
        the inputs on that state: their signs (sign_audit.py, with the precision audit) and whether each
        matters (input_audit.py), on draws without transforms; sets the signs and transforms every later
        draw of both workers applies. Each step can be switched off (JudgeConfig)."""
        audit = make_parameters_matter(self.model, first, tol)
        if perturb_state:
            self.perturbation = perturb.move_parameters(self.model, first, tol, seed)
        audit.update(self.perturbation.report())
        # The verification sets' seeds, then fresh ones; six draws held at once only where they fit.
        extra = max(0, input_audit.AUDIT_DRAWS - len(self.input_seeds))
        seeds = [*self.input_seeds[: input_audit.AUDIT_DRAWS], *(secrets.randbits(62) for _ in range(extra))]
        hold = reference_memory.audit_hold_bytes(share)
        self.signs, self.inputs_audit = sign_audit.audit_inputs(self.model, first, seeds, tol, hold, lambda s, signs: (
            draw_inputs(self.module, s, signs=signs)), mix=mix_signs, inputs=audit_inputs)  # fmt: skip
        self.input_transforms = self.inputs_audit.active()
        if audit_inputs:  # a global loss must read every element: a few large ones in every draw
            self.outliers = outlier_audit.audit(self.model, lambda: draw_inputs(
                self.module, seeds[0], transforms=self.input_transforms, signs=self.signs.signs), tol, first=first,
                truth_model=self.exact)
        return audit

    def _draw(self, seed: int) -> list[Any]:
        """The inputs of `seed`, with the input audit's transforms (as the candidate worker draws them); a
        timed call's, drawn inside its round (the samplers' `draw`): the same steps as the candidate
        worker's, so both contenders' walls hold the same draw."""
        return draw_inputs(self.module, seed, transforms=self.input_transforms, signs=self.signs.signs,
                           outliers=self.outliers.outliers)

    def compare_timing(
        self, seed: int, path: str, atol: float, rtol: float, shared: bool = False,
        aliases: Any = None, precision_k: float | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Check of a timed call the parent chose after its round: the reference's output for that call's
        inputs (drawn again from its seed, or kept in input-file mode) against what the candidate kept."""
        inputs = self.round_sets.get(seed)
        if inputs is None:
            inputs = self._draw(seed)
        expected, exact, ref_aliases = self._reference_on(inputs, Tolerance(atol, rtol), with_truth=bool(precision_k))
        alts = self._cut_alternatives(inputs, expected, Tolerance(atol, rtol)) if self.has_cuts else None
        return self._compare_file(expected, path, atol, rtol, shared, ref_aliases, aliases, exact, precision_k,
                                  alts, explain=lambda produced: self._explain(seed, produced, Tolerance(atol, rtol)))  # fmt: skip

    def _reference_on(self, inputs: list[Any], tol: Tolerance, with_truth: bool = True, private: bool = False,
                      ) -> tuple[list[torch.Tensor], list[truth.Truth | None] | None, list[list[str]]]:  # fmt: skip
        """The reference's outputs on `inputs` (run on a snapshot: it may update them; `inputs` stay as drawn),
        their confirmed truths (None without `with_truth` or a truth model) and its aliasing; `private`
        outputs are copies with their strides, for outputs kept beyond this call."""
        exact = self.exact.outputs(inputs) if self.exact and with_truth else None
        fresh = degeneracy.snapshot(inputs)
        with torch.no_grad():
            raw = flatten_tensors(self.model(*fresh))
        aliases = self._reference_aliases(raw, fresh)  # an input updated in place and returned is `fresh`'s
        outputs = [reference_memory.private_copy(t) for t in raw] if private else [t.detach() for t in raw]
        del raw
        exact = self.exact.confirm(exact, outputs, tol, inputs) if exact else exact
        return outputs, exact, aliases

    def _reference_aliases(self, raw: list[torch.Tensor], inputs: list[Any]) -> list[list[str]]:
        """The reference's own aliasing: inputs, other outputs, and memory it keeps between calls (the
        model's own tensors), so that a candidate may share exactly what the reference shares."""
        kept = aliasing.kept(raw, aliasing.model_memory(self.model))
        return [a + k for a, k in zip(aliasing.aliases(raw, list(inputs)), kept, strict=True)]

    def _cut_alternatives(self, inputs: list[Any], outputs: list[torch.Tensor], tol: Tolerance) -> Any:
        """Where a boolean or integer output may flip (cuts.py): the reference on fresh copies of the
        inputs, its cuts shifted by the tolerance either way."""
        return cuts.alternatives(lambda: flatten_tensors(self.model(*degeneracy.snapshot(inputs))), outputs, tol)

    def compare(
        self, ref_index: int, path: str, atol: float, rtol: float, shared: bool = False,
        aliases: Any = None, precision_k: float | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        seed = self.input_seeds[ref_index]
        if self.outputs[ref_index] is None:  # too large to keep (reference_memory.py): made again from its seed
            return self.compare_timing(seed, path, atol, rtol, shared, aliases, precision_k)
        exact = self.exact_outputs[ref_index] if precision_k else None
        alts = self.cut_alternatives[ref_index] if ref_index < len(self.cut_alternatives) else None
        return self._compare_file(self.outputs[ref_index], path, atol, rtol, shared, self.aliases[ref_index],
                                  aliases, exact, precision_k, alts,
                                  explain=lambda produced: self._explain(seed, produced, Tolerance(atol, rtol)))  # fmt: skip

    def _explain(self, seed: int, produced: list[Any], tol: Tolerance) -> str | None:
        """Why outputs that failed may have failed, when they are what the reference gives with the
        parameters before their perturbation, or on the inputs without the audit's transforms (a kernel
        that assumed an initialiser's structure, or ignored an input): one sentence for the reason. Only
        where a seed reproduces the inputs (else the redraw is not the set that was compared)."""
        if not self.reproducible:
            return None
        try:
            hint = perturb.explain(self.model, self._draw(seed), produced, tol, self.perturbation)
            if hint is None and self.input_transforms is not None:
                raw = draw_inputs(self.module, seed, signs=self.signs.signs, outliers=self.outliers.outliers)
                hint = input_audit.explain(self.model, raw, produced, tol, self.inputs_audit)
            if hint is None and self.signs.mixed:
                unmixed = draw_inputs(self.module, seed, transforms=self.input_transforms, outliers=self.outliers.outliers)
                hint = sign_audit.explain(self.model, unmixed, produced, tol, self.signs)
        except Exception:  # a diagnosis only: the comparison has decided already
            return None
        return hint

    def _read_outputs(self, path: str, shared: bool) -> Any:
        """What the candidate handed over: a tensor file in its shared buffer, or a file it wrote (read
        into memory with every view checked; the file is removed)."""
        if shared:
            return self.shared.load(path, max_bytes=self.shared_limit, device="cuda")
        try:
            return tensorfile.load(path, device="cuda", trusted=False, max_bytes=self.shared_limit)
        finally:
            if os.path.exists(path):
                os.unlink(path)

    def read_probe(self, path: str) -> dict[str, Any]:
        """The shared-buffer probe: the values the candidate worker wrote, or why they cannot be read."""
        try:
            values = self.shared.load(path, max_bytes=PROBE_BYTES, device="cuda")
            return {"values": [int(v) for t in values for v in t.flatten().tolist()], "reason": ""}
        except Exception as exc:
            return {"values": None, "reason": f"{type(exc).__name__}: {exc}"[:300]}

    def end_candidate(self) -> dict[str, Any]:
        """Drop what one candidate's judgment added (timing samplers, input-file rounds, the candidate's
        mapped buffers) and keep the preparation (model, inputs, outputs, truth, audits) for the next
        judgment of the task's group (decide/reference_group.py): nothing after `prepare` writes to it."""
        self.samplers, self.round_sets = {}, {}
        self._forget_received()
        self.shared.close()
        torch.cuda.empty_cache()
        return {}

    def end_judgment(self) -> dict[str, Any]:
        """Drop everything of the judgment that ended (model, outputs, timing sets, the candidate's
        mapped buffers): a kept worker then holds little more than its CUDA context between judgments."""
        if self.module is not None:
            sys.modules.pop(self.module.__name__, None)
        self.model, self.outputs, self.timing_sets, self.samplers = None, [], [], {}
        self.aliases, self.exact_outputs, self.exact, self.round_sets = [], [], None, {}
        self.input_transforms, self.reproducible, self.signs = None, False, sign_audit.SignAudit()
        self.outliers = outlier_audit.OutlierAudit()
        self.perturbation, self.inputs_audit = perturb.Perturbation(), input_audit.InputAudit()
        self.cut_alternatives, self.has_cuts = [], False
        self.response, self.weight_pair = None, None
        self.shared.close()
        torch.cuda.empty_cache()
        return {}

    def _compare_file(
        self, expected: list[torch.Tensor], path: str, atol: float, rtol: float, shared: bool,
        ref_aliases: list[list[str]] | None = None, got_aliases: Any = None,
        exact: list[truth.Truth | None] | None = None, precision_k: float | None = None,
        alts: list[cuts.Alternatives | None] | None = None,
        explain: Callable[[list[Any]], str | None] | None = None, received: list[list[Any]] | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """The candidate's outputs at `path` judged against `expected` (output_verdict.py); `received`, when
        given, gets what was read (the response check keeps a changed set's outputs)."""
        try:
            produced = self._read_outputs(path, shared)
        except UnsafeBuffer as exc:
            return {"match": False, "reason": f"outputs could not be read: {exc}"[:600]}
        except Exception as exc:
            return {"match": False, "reason": f"outputs could not be read as plain tensors ({exc})"[:600]}
        if not isinstance(produced, list) or len(produced) != len(expected):
            count = len(produced) if isinstance(produced, list) else "?"
            return {"match": False, "reason": f"forward returned {count} tensors, expected {len(expected)}"}
        verdict = judge_outputs(expected, produced, Tolerance(atol, rtol), ref_aliases, got_aliases, exact,
                                precision_k, alts)  # fmt: skip
        if received is not None:
            received.append(produced)
        if not verdict["match"] and "kind" not in verdict and explain is not None:
            hint = explain(produced)
            if hint:
                verdict["reason"] = f"{verdict['reason']}; {hint}"
        return verdict

    def exit(self) -> dict[str, Any]:
        return {}


def main() -> None:
    worker = ReferenceWorker()
    serve(
        {
            "warm": worker.warm,
            "prepare": worker.prepare,
            "compare": worker.compare,
            "save_inputs": worker.save_inputs,
            "read_probe": worker.read_probe,
            "end_judgment": worker.end_judgment,
            "end_candidate": worker.end_candidate,
            "compare_timing": worker.compare_timing,
            "write_changed": worker.write_changed,
            "compare_changed": worker.compare_changed,
            "write_variant": worker.write_variant,
            "compare_variant": worker.compare_variant,
            "draw_round": worker.draw_round,
            "free_memory": worker.free_memory,
            "time_setup": worker.time_setup,
            "time_round": worker.time_round,
            "clock_setup": worker.clock_setup,
            "time_pad": worker.time_pad,
            "drain": worker.drain,
            "environment": worker.environment,
            "exit": worker.exit,
        }
    )


if __name__ == "__main__":
    main()
