"""One preparation of the reference serving a group of judgments of one task (issue 34, item 3).

Why: RL rollouts come as groups, G candidates for one task, and the judge prepared the reference afresh for
each: secret seeds, the model built and its weights moved to a generic point, the input audit, five input
sets, their outputs and float64 truth, the degeneracy audit. On the H200 (2026-12-04, `judge_throughput.py
--rl-shaped`, 8 tasks x 8 candidates) that was 0.54 s of every verdict's 3.3 s on the GPU lane, the same
work eight times over. Now the first judgment of a task prepares, and the next ones of that task (up to
`JudgeConfig.reference_group_uses` in all) reuse it: the reference worker keeps its preparation between
them (`end_candidate` instead of `end_judgment`), and each judgment gets its own copy of the state file.

What the candidates of a group share, and why that leaks nothing:
- They share the verification input seeds, the weights' generic point and the reference outputs. Each
  candidate still receives a seed only with the call that uses it (reference_stage.py), and the seeds come
  from `secrets`, so no candidate can derive them. A candidate that has seen them could pass them, with the
  outputs, to a later candidate of its group only through a place both can write; candidates get none:
  each runs in a fresh process (killed after its verdict, with every process its sandbox user left), made
  undumpable before any candidate code exists (common/procs.py), with private mounts over every
  world-writable folder and its own IPC namespace (trusted/sandbox.py). The group is used only where the
  sandbox reports those protections active (`WorkerPool.candidates_share_no_place`); elsewhere every
  judgment prepares afresh, as before.
- They do not share anything timed: every timed round draws fresh inputs from fresh seeds (timing_stage.py),
  warm-up sets are fresh per judgment, and the baselines are measured or read from their cache as before.
- A judgment that changes the preparation ends the group: a switch to input files (the reference then
  writes input sets for that candidate), and any failed call to the reference worker (which retires it).

Trust boundary: runs in the parent, on replies from the reference worker (trusted); the copy of the state
file is made by the parent from the file the reference wrote, in a folder the candidate cannot write.
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_agent.judge.config import JudgeConfig

# The settings a preparation depends on: another value of any of them is another preparation.
PREPARATION_SETTINGS = ("atol", "rtol", "input_sets", "precision_audit", "perturb_parameters", "input_audit",
                        "sign_audit", "reference_kept_share")


def group_key(task_digest: str, config: JudgeConfig) -> str:
    """The task and every setting the reference's preparation depends on."""
    settings = {name: getattr(config, name) for name in PREPARATION_SETTINGS}
    return hashlib.sha256(f"{task_digest}|{json.dumps(settings, sort_keys=True)}".encode()).hexdigest()


@dataclass
class PreparedGroup:
    """A preparation the reference worker keeps for the next judgments of its task."""

    key: str
    reply: dict[str, Any]  # the worker's `prepare` reply, checked by the judgment that made it
    input_seeds: list[int]
    state_file: Path  # the state every candidate of the group loads (the parent's copy)
    limit: int
    uses: int = 1

    def reusable(self) -> bool:
        return self.uses < self.limit

    def serves(self, key: str) -> bool:
        return self.key == key and self.reusable()

    def hand_out(self, io_dir: Path) -> dict[str, Any]:
        """One more judgment of the group: its own copy of the state file and of the preparation's reply
        (a judgment may keep parts of it and change them; the next must get the reply as prepared)."""
        shutil.copyfile(self.state_file, io_dir / "state.pt")
        self.uses += 1
        return copy.deepcopy(self.reply)


def start_group(key: str, reply: dict[str, Any], input_seeds: list[int], io_dir: Path, keep_dir: Path,
                limit: int) -> PreparedGroup | None:  # fmt: skip
    """After a fresh preparation that passed its checks: keep it for the next judgments of the task (None
    where groups are off, `limit` <= 1)."""
    if limit <= 1:
        return None
    state_file = keep_dir / "group-state.pt"
    shutil.copyfile(io_dir / "state.pt", state_file)
    return PreparedGroup(key, copy.deepcopy(reply), list(input_seeds), state_file, limit)


def describe(group: PreparedGroup) -> str:
    """The verdict's record of which preparation a judgment used."""
    if group.uses == 1:
        return f"prepared for this judgment (may serve {group.limit - 1} more of this task)"
    return f"shared: judgment {group.uses} of at most {group.limit} of this task on one preparation"
