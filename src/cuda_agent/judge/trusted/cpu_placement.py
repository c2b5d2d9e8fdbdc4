"""Where a worker's threads run: spare workers may warm on the compilers' CPUs, then move to their lane's.

A spare's warm-up is mostly CPU work: `import torch` (about 2.5 s) and CUPTI's start-up (about 4 s of CPU
over its threads, H100). Spares are started from threads pinned to their GPU lane's CPUs
(`service.split_cpus`: at most 4), the same CPUs the timed rounds' host side runs on, and the lane keeps
two or three spares warming. With the warm-up beside timing (JudgeConfig.warm_beside_timing) the batch ran
16% faster, yet its timing stage grew by 0.14 s a verdict, while the warm-up's GPU parts moved another
process's kernel times by at most 0.6% at the median (H100, 2026-12-07: docs/design/throughput.md): the
CPUs are the likelier cause. `JudgeConfig.spares_on_build_cpus` (an experiment, off) warms spares on the
compilers' CPUs and moves each one to its lane's CPUs when a judgment takes it.

Trust boundary: runs in the parent, on workers the pool started. It establishes no fact of a verdict; a
worker that cannot be moved (a sandbox user the judge may not re-pin) is reported, and the pool stops
warming elsewhere, so no candidate is timed from the compilers' CPUs.
"""

from __future__ import annotations

import os

PASSES = 5  # threads a worker starts while it is moved are caught by the next pass


def move_threads(pid: int, cpus: frozenset[int]) -> str | None:
    """Pin every thread of process `pid` to `cpus`. None once a pass finds every thread there; otherwise
    why not (the process gone, not permitted, threads still being started after PASSES passes)."""
    for _ in range(PASSES):
        try:
            threads = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
        except OSError as exc:
            return f"cannot list the threads of {pid}: {exc.strerror}"
        moved = False
        for tid in threads:
            try:
                if os.sched_getaffinity(tid) != cpus:
                    os.sched_setaffinity(tid, cpus)
                    moved = True
            except ProcessLookupError:  # a thread that ended meanwhile
                continue
            except OSError as exc:
                return f"cannot move thread {tid} of {pid}: {exc.strerror}"
        if not moved:
            return None
    return f"threads of {pid} were still being started after {PASSES} passes"
