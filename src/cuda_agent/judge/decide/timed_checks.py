"""Timed calls on fresh content, and the checked ones chosen after the round, in secret.

Runs in the parent. Facts it establishes: every timed call gets inputs of its own (one `secrets` seed per
call, made here for one round and sent with the command that times it, so the inputs are drawn inside the
round's clock), and the outputs of the calls chosen after
the round match the reference's (compared by the reference worker on inputs it draws again from the
seed). The candidate cannot forge them: while a round runs no call can know whether the round or which
call will be asked for (the choice is made here, with `secrets`, after the reply), and every call keeps
its inputs and output until then (`Sampler.kept`).
"""

from __future__ import annotations

import secrets
from typing import Any

from cuda_agent.judge.common.channel import WorkerHandle
from cuda_agent.judge.decide.verdict import Status


class TimedChecks:
    """Fresh timed inputs and secret spot checks (mixed into `Judgment`)."""

    def new_round(self, ref: WorkerHandle) -> dict[str, Any]:
        """Seeds for the next round, one per call, made now for this round alone (`round_seeds`). Returns
        the arguments that carry its inputs: the seeds, for the command that times the round (its inputs
        are drawn inside it), or, in input-file mode (a task whose inputs a seed does not reproduce), a
        file of the sets the reference drew from them, for the round's set-up: read before the clock
        starts, the one mode where a round's content exists before its clock (trust_boundary.md)."""
        samples = self.round_plan.calls
        self.round_seeds = [secrets.randbits(62) for _ in range(samples)]
        if self.input_files:
            made = self._reference_call(ref, "draw_round", self.config.prepare_timeout_s,
                                        seeds=self.round_seeds, workdir=str(self.io_dir))  # fmt: skip
            return {"inputs_path": made["path"]}
        return {"seeds": self.round_seeds}

    def check_round(self, ref: WorkerHandle, cand: WorkerHandle, share: float = 1.0) -> bool:
        """After a round: with probability `share` (decided now, by this process), compare the outputs
        of `timed_checks_per_round` calls chosen now with the reference on those calls' inputs. The
        candidate kept every call's output and could not tell, while it ran, whether the round or which
        call would be asked for. Returns whether the round was checked."""
        if share < 1.0 and secrets.randbelow(1 << 20) >= share * (1 << 20):
            return False
        chosen = list(range(len(self.round_seeds)))
        picks = []
        for _ in range(min(self.config.timed_checks_per_round, len(chosen))):
            picks.append(chosen.pop(secrets.randbelow(len(chosen))))
        for index in picks:
            self.spot_check(ref, cand, index)
        return True

    def spot_check(self, ref: WorkerHandle, cand: WorkerHandle, index: int) -> None:
        """Compare the output of timed call `index` of the last round with the reference's on its inputs."""
        path = self.out_dir / "timed_output.tensors"
        with self.timed("spot_checks"):
            reply = self._candidate_call(cand, "dump_call", self.config.forward_timeout_s,
                                         "saving a timed output", index=index, output_path=str(path),
                                         shared=self.shared_outputs)  # fmt: skip
            self.check_memory_at_rest(ref, cand)
            verdict = self._reference_call(
                ref, "compare_timing", self.config.prepare_timeout_s, seed=self.round_seeds[index],
                **self.handed_over(cand, reply, path), atol=self.config.atol, rtol=self.config.rtol,
                aliases=reply.get("aliases"), precision_k=self.precision_k(),
            )  # fmt: skip
        self.note_error_ratio(verdict)
        if not verdict["match"]:
            raise self.fail(Status.INCORRECT, f"a timed call returned a wrong result: {verdict['reason']}")
        self.checks["timed_spot_checks"] = self.checks.get("timed_spot_checks", 0) + 1
