"""`cuda-agent train grpo` with faults injected at the judge seam (issue 31): every judgment goes to the real
judge on this GPU (the local JudgeService the command would open), except that on a fixed schedule

- a judgment raises before it starts (`--raise-every N`: the judge process dying, a bug in it), and
- a judgment runs while another process keeps the GPU busy with matmuls (`--contend-every N`: real
  contention, as a one-GPU user's generation or training would make; the judge's drain before timing
  sees the GPU never go quiet).

Neither may become a reward: each such rollout must be masked out of the loss and counted in its step's
metrics, and the step must go on. A contended judgment that ends -1 is judged again on a quiet GPU: the -1
stands only if the submission earns it there too (a build that fails, a wrong result). Takes the arguments
of `cuda-agent train grpo` after its own; prints the command's JSON summary on one line, with `injected`
(what was injected, judgment by judgment) added.

    python scripts/device/grpo_faults.py [--raise-every 4] [--contend-every 4] train grpo --tasks ... --json

With both at 4: judgments 4, 8, 12, ... raise; 2, 6, 10, ... run under contention; the odd ones are plain.

Run by train_grpo.py --faults.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

SPINNER = """
import sys, torch
a = torch.randn(8192, 8192, device="cuda")
b = a @ a
torch.cuda.synchronize()
print("busy", flush=True)
while True:
    b = a @ a
"""


@contextmanager
def gpu_kept_busy() -> Iterator[None]:
    """Another process saturating this GPU with matmuls for the duration (started, seen running, killed)."""
    proc = subprocess.Popen([sys.executable, "-c", SPINNER], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "busy":
            raise RuntimeError(f"the GPU spinner did not start (exit {proc.poll()})")
        yield
    finally:
        proc.kill()
        proc.wait()


class FaultyJudge:
    """The `Judge` seam around a real judge, with faults on a fixed schedule (judgments counted from 1)."""

    def __init__(self, inner: Any, raise_every: int, contend_every: int) -> None:
        self.inner = inner
        self.raise_every, self.contend_every = raise_every, contend_every
        self.count = itertools.count(1)
        self.lock = threading.Lock()
        self.injected: list[dict[str, Any]] = []

    def __call__(self, workspace: Path, task: Any) -> Any:
        with self.lock:
            n = next(self.count)
        if self.raise_every and n % self.raise_every == 0:
            self.injected.append({"judgment": n, "fault": "raise", "task": task.name})
            raise RuntimeError(f"injected fault: judgment {n} failed before it started (the judge process died)")
        if self.contend_every and n % self.contend_every == self.contend_every // 2:
            from cuda_agent.train.unjudged import training_signal

            try:
                with gpu_kept_busy():
                    outcome = self.inner(workspace, task)
            except Exception as exc:  # the spinner or the judge raised: the rollout is masked as judge_error
                self.injected.append({"judgment": n, "fault": "contention", "task": task.name, "status": "raised",
                                      "reward": None, "reason": f"{type(exc).__name__}: {exc}"[:300],
                                      "final_status": "judge_error", "final_reward": None})  # fmt: skip
                raise
            seen = training_signal(outcome, shared_gpus=True)  # what the rollout gets (the environment's rule)
            entry = {"judgment": n, "fault": "contention", "task": task.name, "status": outcome.status,
                     "reward": outcome.reward, "reason": outcome.reason[:300],
                     "final_status": seen.status, "final_reward": seen.reward}  # fmt: skip
            if seen.reward == -1:
                # A -1 under contention is fair only if the submission earns it on a quiet GPU too (a build
                # that fails, a wrong result): judge the same workspace again, uncontended, to tell which.
                plain = self.inner(workspace, task)
                entry.update(uncontended_status=plain.status, uncontended_reward=plain.reward,
                             minus_1_from_contention=plain.reward != -1)  # fmt: skip
            self.injected.append(entry)
            return outcome
        return self.inner(workspace, task)

    def close(self) -> None:
        if hasattr(self.inner, "close"):
            self.inner.close()


def main(argv: list[str] | None = None) -> int:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    own.add_argument("--raise-every", type=int, default=4)
    own.add_argument("--contend-every", type=int, default=4)
    known, rest = own.parse_known_args(argv)
    from cuda_agent.agent.judging import ServiceJudge
    from cuda_agent.commands.train import add_parser, grpo_settings
    from cuda_agent.train.grpo import judge_processes, run_grpo

    cli = argparse.ArgumentParser()
    add_parser(cli.add_subparsers(dest="command"), "train")
    settings = grpo_settings(cli.parse_args(rest))
    judge = FaultyJudge(ServiceJudge(), known.raise_every, known.contend_every)
    try:
        summary = run_grpo(settings, judge=judge)
    finally:
        judge.close()
    # run_grpo leaves a judge it was given open (the caller's to close), so the leak check is made here, after.
    summary["judge_processes_left"] = judge_processes()
    summary["injected"] = judge.injected
    print(json.dumps(summary, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
