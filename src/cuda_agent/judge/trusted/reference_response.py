"""The reference worker's part of the low-bit response check (response_probe.py): the pair of changed
sets made in `prepare`, each written for the candidate just before its call, and compared as any set and
then as a pair. Mixed into `ReferenceWorker` (reference_worker.py), whose state it uses: the model, its
truth, the draw, the comparison of a candidate's output file."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import torch

from cuda_agent.judge.candidate.inputs import fingerprint
from cuda_agent.judge.common import tensorfile
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
    exact: Any
    sizes: dict[str, int]
    has_cuts: bool

    def _prepare_response(self, keep: bool, tol: Tolerance, share: float, stage_dir: str | None = None) -> dict[str, Any]:
        """The low-bit response check's pair (response_probe.py): a base set from a fresh secret seed, never
        shown to the candidate, moved up and down in its inputs' low bits along the reference's gradient of
        a secret weighting of its outputs; the reference's outputs and truths on both. Where it cannot be
        made, why (the verdict records it; the precision audit still stands)."""
        self.response = None
        if self.exact is None:
            return {"sets": 0, "why": "the precision audit is off"}
        # what a pair keeps: two sets' outputs and truths (as the first verification set's) and inputs
        per_set = self.sizes.get("kept per set", 0) + self.sizes.get("one input set", 0)
        if not keep or not reference_memory.keeps_every_set(per_set, 2, share):
            return {"sets": 0, "why": "the outputs are too large to keep another pair of sets"}
        try:
            base = self._draw(secrets.randbits(62))
            device = next((t.device for t in base if isinstance(t, torch.Tensor)), torch.device("cuda"))
            generator = torch.Generator(device=device)
            generator.manual_seed(secrets.randbits(62))
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
        return made_pair

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
        path, partial = folder / f"changed_{which}.tensors", folder / f".changed_{which}.partial"
        try:
            tensorfile.save(pair.inputs[which], partial)
            os.replace(partial, path)
        except OSError:
            partial.unlink(missing_ok=True)  # what a full disk left must not fill it for the next
            raise
        staged.append({"path": str(path), "print": pair.prints[which]})
    return staged
