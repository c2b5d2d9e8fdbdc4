"""Timed outputs taken now and judged after the timing (issue 34, two judgments per GPU).

A spot check of a timed call (decide/timed_checks.py) has two parts: the candidate's output read out of
its hand-over, and the reference's answer for that call's inputs (its forward and float64 truth) with the
comparison. Only the first must happen between rounds: the next round overwrites what the candidate kept.
The second is most of a check's time (about 80 ms of a warm judgment's 0.29 s of spot checks, H100,
2026-12-07), and done inside the timing it holds the GPU's one writer section (trusted/lane_share.py)
against the other judgment's timing. Taken here, the output's bytes stay in this worker's host memory,
untouched by anything the candidate does later, and are judged by `compare_taken` once the timing has
ended, as a reader beside the other judgment. What is compared, and against what, does not change: the
same bytes, decoded by the same code, against the reference on inputs drawn again from the same seed.

Not taken (the caller compares at once, as before): outputs past `HELD_BYTES` in all, and input-file mode,
whose round sets are replaced by the next round's (a seed does not reproduce them).
"""

from __future__ import annotations

import os
from typing import Any

from cuda_agent.judge.common.shared_outputs import SharedOutputReader, UnsafeBuffer

# Host memory one judgment's taken outputs may hold (a check's output is one call's; a judgment takes
# about five); past it a check is compared at once.
HELD_BYTES = 1 << 30


class TakenOutputs:
    """Mixed into ReferenceWorker: `take_timed` between rounds, `compare_taken` after the timing."""

    shared: SharedOutputReader
    shared_limit: int
    round_sets: dict[int, Any]
    taken: list[tuple[int, bytes | str, Any]]  # (seed, the hand-over's bytes or why unreadable, aliases)
    # and its `compare_timing`, which takes the bytes as `raw`

    def take_timed(self, seed: int, path: str, shared: bool = False, aliases: Any = None) -> dict[str, Any]:
        """Copy the candidate's output of a timed call out of its hand-over, to be judged later; or say
        why not (then the caller compares it now with `compare_timing`)."""
        if self.round_sets:
            return {"taken": False, "why": "input-file mode: the round's inputs are not kept"}
        room = HELD_BYTES - sum(len(raw) for _, raw, _ in self.taken)
        try:
            raw = self._handed_bytes(path, shared, room)
        except (OSError, UnsafeBuffer) as exc:  # judged as unreadable, as compare_timing would
            raw = f"outputs could not be read: {exc}"[:600]
        if raw is None:
            return {"taken": False, "why": f"more than {HELD_BYTES >> 20} MiB held"}
        self.taken.append((seed, raw, aliases))
        return {"taken": True}

    def compare_taken(self, atol: float, rtol: float, precision_k: float | None = None) -> dict[str, Any]:
        """Every taken output judged by `compare_timing`, in the order taken; none kept after."""
        taken, self.taken = self.taken, []
        verdicts = []
        for seed, raw, aliases in taken:
            if isinstance(raw, str):
                verdicts.append({"match": False, "reason": raw})
                continue
            verdicts.append(self.compare_timing(  # type: ignore[attr-defined]
                seed, "", atol, rtol, aliases=aliases, precision_k=precision_k, raw=raw))
        return {"verdicts": verdicts}

    def _handed_bytes(self, path: str, shared: bool, room: int) -> bytes | None:
        """The hand-over's bytes (a shared buffer's, or the file's, which is removed), or None past `room`."""
        if shared:
            view = self.shared.view(path, max_bytes=self.shared_limit)
            return bytes(view) if len(view) <= room else None
        if os.path.getsize(path) > room:
            return None  # left for compare_timing, which reads and removes it
        try:
            with open(path, "rb") as handle:
                return handle.read()
        finally:
            os.unlink(path)
