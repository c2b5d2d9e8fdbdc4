"""The reference worker's part of the low-bit response check (response_probe.py): the pair of changed
sets made in `prepare`, each written for the candidate just before its call, and compared as any set and
then as a pair. Mixed into `ReferenceWorker` (reference_worker.py), whose state it uses: the model, its
truth, the draw, the comparison of a candidate's output file."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from cuda_agent.judge.candidate.inputs import fingerprint
from cuda_agent.judge.common import tensorfile
from cuda_agent.judge.common.judge_files import VARIANT_FILE
from cuda_agent.judge.trusted import reference_memory, response_probe
from cuda_agent.judge.trusted.compare import Tolerance
from cuda_agent.task import flatten_tensors, tensor_bytes

# Changed sets up to this size are staged with the preparation (`stage_changed`): the scratch root is
# /dev/shm by default, memory, where a group keeps both sets for its lifetime; larger ones, whose write is
# small beside their comparisons, are written just before each call as before.
STAGE_MAX_BYTES = 1 << 30


class ResponseCheck:
    """The low-bit response check's commands of the reference worker."""

    # provided by ReferenceWorker (reference_worker.py)
    response: response_probe.Pair | None
    weight_pair: response_probe.WeightPair | None = None
    model: torch.nn.Module
    exact: Any
    sizes: dict[str, int]
    has_cuts: bool
    aimed: dict[str, Any] | None = None

    def _aim_pairs(self, precision_audit: bool, share: float) -> None:
        """Before the state goes to the candidate: the pairs' secret base set (its seed, drawn again when the
        pair is made) and output weighting (a generator's seed), and each parameter's direction at that base.
        The parameters are moved up along theirs in place: the state the candidate loads is the weight
        pair's first point, the second is kept (`aimed`). Both points differ from the base, never handed
        over, so a kernel that rounds the loaded parameters errs along the secret direction."""
        self.aimed = None
        if not precision_audit:
            return
        aimed: dict[str, Any] = {"base": secrets.randbits(62), "weighting": secrets.randbits(62)}
        self.aimed = aimed
        parameters = response_probe.weighed_parameters(self.model)
        if not parameters:
            return
        # A forward with autograd holds the activations: only where an input set and the parameters are small
        # beside the memory the kept sets may use (the low-bit pair's own condition, reference_memory.py).
        held = 4 * self.sizes.get("one input set", 0) + 3 * tensor_bytes(list(parameters.values()))
        if not reference_memory.keeps_every_set(held, 1, share):
            aimed["weights_why"] = "the inputs and parameters are too large for a backward of the reference"
            return
        try:
            base = self._draw(aimed["base"])
            aimed["base_print"] = fingerprint(base)
            generator = torch.Generator(device=next(iter(parameters.values())).device)
            moves = dict(parameters)  # becomes each parameter's direction
            summed: list[str] = []
            response_probe.aim(self.model, base, generator.manual_seed(aimed["weighting"]), flatten_tensors, moves,
                               summed)  # fmt: skip
            del base
            if not moves and any(not name.startswith("input ") for name in summed):
                aimed["weights_why"] = "the outputs take every fp32 parameter they depend on only as a plain sum (a bias)"
                return
            generator.manual_seed(secrets.randbits(62))
            points = [response_probe.weight_moves(moves, parameters, up, generator) for up in (True, False)]
        except Exception as exc:  # no gradient, memory: the low-bit pair says why when it is made
            torch.cuda.empty_cache()
            aimed["weights_why"] = f"{type(exc).__name__}: {exc}"[:200]
            return
        with torch.no_grad():
            for name, value in points[0].items():
                parameters[name].copy_(value)
        aimed["second"] = points[1]
        aimed["moved_elements"] = sum(int(d.count_nonzero()) for d in moves.values())

    def _prepare_response(self, keep: bool, tol: Tolerance, share: float, stage_dir: str | None = None) -> dict[str, Any]:
        """The low-bit response check's pair (response_probe.py): the base set chosen by `_aim_pairs`, never
        shown to the candidate, moved up and down in its inputs' low bits along the reference's gradient of
        a secret weighting of its outputs; the reference's outputs and truths on both; then the weight pair.
        Where they cannot be made, why (the verdict records it; the precision audit still stands)."""
        self.response, self.weight_pair = None, None
        aimed = self.aimed
        if self.exact is None or aimed is None:
            return {"sets": 0, "why": "the precision audit is off"}
        # what a pair keeps: two sets' outputs and truths (as the first verification set's) and inputs
        per_set = self.sizes.get("kept per set", 0) + self.sizes.get("one input set", 0)
        if not keep or not reference_memory.keeps_every_set(per_set, 2, share):
            return {"sets": 0, "why": "the outputs are too large to keep another pair of sets"}
        try:
            base = self._draw(aimed["base"])
            if aimed.get("second") and fingerprint(base) != aimed.get("base_print"):  # the parameters' aim is off
                aimed["second"], aimed["weights_why"] = None, "the task's inputs differ when drawn again from a seed"
            device = next((t.device for t in base if isinstance(t, torch.Tensor)), torch.device("cuda"))
            generator = torch.Generator(device=device)
            generator.manual_seed(aimed["weighting"])  # the weighting the parameters were aimed with
            directions, weights = response_probe.aim(self.model, base, generator, flatten_tensors)
            pair = tuple([response_probe.moved(t, d, up, generator) if response_probe.probed(t) else t
                          for t, d in zip(base, directions, strict=True)] for up in (True, False))  # fmt: skip
            del base
            made = [self._reference_on(inputs, tol, private=True) for inputs in pair]
        except Exception as exc:  # no gradient, an in-place update autograd refuses, memory: not made, said why
            torch.cuda.empty_cache()
            return {"sets": 0, "why": f"{type(exc).__name__}: {exc}"[:200]}
        if any(truths is None or all(t is None for t in truths) for _, truths, _ in made):
            return {"sets": 0, "why": f"no float64 truth of the changed sets ({self.exact.problem})"[:200]}
        self.response = response_probe.Pair(
            inputs=pair, expected=(made[0][0], made[1][0]), truths=(made[0][1], made[1][1]), weights=weights,
            prints=(fingerprint(pair[0]), fingerprint(pair[1])), aliases=(made[0][2], made[1][2]),
        )  # fmt: skip
        moved = sum(int(d.count_nonzero()) for d in directions if d is not None)
        made_pair: dict[str, Any] = {"sets": 2, "moved_elements": moved}
        if stage_dir and tensor_bytes(pair[0]) <= STAGE_MAX_BYTES:
            try:
                made_pair["staged"] = stage_changed(self.response, Path(stage_dir))
            except OSError as exc:  # a full disk: the judge writes each set before its call instead
                made_pair["staged_why"] = f"{type(exc).__name__}: {exc}"[:200]
        elif stage_dir:
            made_pair["staged_why"] = f"a changed set of {tensor_bytes(pair[0]):,} bytes is written before its call"
        made_pair["weights"] = self._prepare_weights(aimed, tol, share, stage_dir)
        return made_pair

    def _prepare_weights(self, aimed: dict[str, Any], tol: Tolerance, share: float,
                         stage_dir: str | None) -> dict[str, Any]:  # fmt: skip
        """The weight pair (response_probe.WeightPair): the reference's outputs, truths and cuts on changed
        set B at the parameters' second point, and that point's state file, staged where the changed sets
        are. Where it cannot be made, why (the low-bit pair and the precision audit still stand)."""
        self.weight_pair = None
        assert self.response is not None
        second = aimed.get("second")
        if not second:
            return {"made": False, "why": aimed.get("weights_why", "no fp32 or float64 parameter the outputs depend on")}
        # with the pair: a third point's outputs and truths, and the parameters twice (the second point, and
        # the first kept while the reference runs at the second)
        kept = self.sizes.get("kept per set", 0)
        total = 3 * kept + 2 * self.sizes.get("one input set", 0) + 2 * tensor_bytes(list(second.values()))
        if not reference_memory.keeps_every_set(total, 1, share):
            return {"made": False, "why": "the outputs and parameters are too large to keep another point"}
        inputs = self.response.inputs[1]
        try:
            with self._parameters_at(second):
                expected, truths, aliases = self._reference_on(inputs, tol, private=True)
                alternatives = self._cut_alternatives(inputs, expected, tol) if self.has_cuts else None
        except Exception as exc:  # memory, an op the truth refuses: not made, said why
            torch.cuda.empty_cache()
            return {"made": False, "why": f"{type(exc).__name__}: {exc}"[:200]}
        if truths is None or all(t is None for t in truths):
            return {"made": False, "why": f"no float64 truth at the second point ({self.exact.problem})"[:200]}
        self.weight_pair = response_probe.WeightPair(second, expected, truths, aliases, alternatives)
        made: dict[str, Any] = {"made": True, "moved_parameters": len(second), "moved_elements": aimed["moved_elements"]}
        if stage_dir and tensor_bytes(list(second.values())) <= STAGE_MAX_BYTES:
            try:
                made["staged"] = self._save_variant(Path(stage_dir) / VARIANT_FILE, staged=True)
            except OSError as exc:  # a full disk: the judge has it written before its call instead
                made["staged_why"] = f"{type(exc).__name__}: {exc}"[:200]
        return made

    @contextlib.contextmanager
    def _parameters_at(self, values: dict[str, torch.Tensor]) -> Iterator[None]:
        """The reference model with the named parameters set to `values` (in place, so the truth's copies
        follow by their version counters), restored bit for bit afterwards."""
        live = dict(self.model.named_parameters())
        kept = {name: live[name].detach().clone() for name in values}
        try:
            with torch.no_grad():
                for name, value in values.items():
                    live[name].copy_(value)
            yield
        finally:
            with torch.no_grad():
                for name, value in kept.items():
                    live[name].copy_(value)

    def _save_variant(self, path: Path, staged: bool = False) -> dict[str, Any]:
        """The second point's state_dict written for the candidate's second ModelNew (aside, then renamed:
        a new inode, never one an earlier judgment linked out); `staged` in the slot's own folder."""
        assert self.weight_pair is not None
        if staged:
            path.parent.mkdir(mode=0o700, exist_ok=True)
        with self._parameters_at(self.weight_pair.state):
            _write_aside(path, lambda partial: torch.save({"state_dict": self.model.state_dict()}, partial))
        return {"path": str(path)}

    def write_variant(self, workdir: str) -> dict[str, Any]:
        """The second point's state file for the candidate's next call, just before it."""
        if self.weight_pair is None:
            raise ValueError("no weight pair was prepared")
        return self._save_variant(Path(workdir) / VARIANT_FILE)

    def compare_variant(
        self, path: str, atol: float, rtol: float, shared: bool = False, aliases: Any = None,
        precision_k: float | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """The second ModelNew's output on changed set B compared as any set (tolerance, precision audit
        against the truth at the second point), then its response to the parameters' change against the
        exact one: the first ModelNew's output on B (kept by `compare_changed`) minus this."""
        wp, pair = self.weight_pair, self.response
        if wp is None or pair is None:
            raise ValueError("no weight pair was prepared")
        received: list[list[Any]] = []
        verdict = self._compare_file(wp.expected, path, atol, rtol, shared, wp.aliases, aliases,
                                     wp.truths if precision_k else None, precision_k, wp.alternatives,
                                     received=received)  # fmt: skip
        first, wp.first = wp.first, None
        if not verdict["match"] or not received or first is None or not precision_k:
            return verdict
        findings = response_probe.responses(first, received[0], pair.truths[1], wp.truths, pair.weights)
        verdict["weight_response"] = [f.record() for f in findings]
        failed = [f for f in findings if not f.passed]
        if failed:
            return {**verdict, "match": False, "reason": response_probe.reason(failed[0], "weights")}
        return verdict

    def _forget_received(self) -> None:
        """What one candidate returned for the pairs (a group's next candidate starts from nothing)."""
        if self.response is not None:
            self.response.received.clear()
        if self.weight_pair is not None:
            self.weight_pair.first = None

    def write_changed(self, which: int, workdir: str) -> dict[str, Any]:
        """Write changed set `which` (0: moved up, 1: down) for the candidate's next call, just before it:
        the other set is never on disk while the candidate runs."""
        if self.response is None:
            raise ValueError("no low-bit response pair was prepared")
        path = Path(workdir) / f"changed_{which}.tensors"
        tensorfile.save(self.response.inputs[which], path)
        return {"path": str(path), "print": self.response.prints[which]}

    def compare_changed(
        self, which: int, path: str, atol: float, rtol: float, shared: bool = False,
        aliases: Any = None, precision_k: float | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Changed set `which` compared as any input set (tolerance, precision audit); after the second,
        the candidate's response to the change against the exact one (response_probe.py)."""
        pair = self.response
        if pair is None:
            raise ValueError("no low-bit response pair was prepared")
        received: list[list[Any]] = []
        alts = None
        if self.has_cuts:
            alts = self._cut_alternatives(pair.inputs[which], pair.expected[which], Tolerance(atol, rtol))
        verdict = self._compare_file(pair.expected[which], path, atol, rtol, shared, pair.aliases[which], aliases,
                                     pair.truths[which] if precision_k else None, precision_k, alts,
                                     received=received)  # fmt: skip
        if not verdict["match"] or not received:
            return verdict
        pair.received[which] = [t.detach().clone() for t in received[0]]
        if which == 1 and self.weight_pair is not None:  # the weight pair's first point (compare_variant)
            self.weight_pair.first = pair.received[1]
        if len(pair.received) == 2 and precision_k:
            findings = pair.findings()
            pair.received.clear()
            verdict["response"] = [f.record() for f in findings]
            failed = [f for f in findings if not f.passed]
            if failed:
                return {**verdict, "match": False, "reason": response_probe.reason(failed[0])}
        return verdict


def stage_changed(pair: response_probe.Pair, folder: Path) -> list[dict[str, Any]]:
    """Both changed sets written ahead, in `folder`: the reference slot's own (mode 700, under a root of
    mode 700), which a candidate running as another uid cannot read. The judge links each into the
    candidate's input folder just before its call (decide/verify_stage.py). The two writes (2 x 144 ms
    a verdict on the H100, 2026-12-05) then go with the preparation, which a lone judgment overlaps with
    its build and a group's later judgments skip, instead of sitting between the candidate's calls; the
    other set still never reaches the candidate before its turn. Each file gets a new inode (written
    aside, then renamed), never one an earlier judgment linked out."""
    folder.mkdir(mode=0o700, exist_ok=True)
    staged = []
    for which in (0, 1):
        path = folder / f"changed_{which}.tensors"
        _write_aside(path, lambda partial, which=which: tensorfile.save(pair.inputs[which], partial))
        staged.append({"path": str(path), "print": pair.prints[which]})
    return staged


def _write_aside(path: Path, write: Callable[[Path], Any]) -> None:
    """`write` into a partial file beside `path`, then renamed over it: a new inode each time, never one
    an earlier judgment linked out; what a full disk left is removed, not left to fill it for the next."""
    partial = path.with_name(f".{path.stem}.partial")
    try:
        write(partial)
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)
        raise
