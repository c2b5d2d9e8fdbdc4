"""What of a judgment's preparation the reference worker keeps on the GPU, and the one line it gives when a
task does not fit (issue 29 item 1).

Why: the preparation held every input set, every reference output and every float64 truth of the
judgment at once. At KernelBench's current sizes that is many times one forward: Softsign's inputs are
6.4 GB a set, so five sets, their outputs and their float64 truths came to about 130 GB, and the judge ran
out of memory on a 141 GB H200 on tasks a kernel would run in a few GB.

Now (trusted/reference_worker.py `prepare`):
- input sets are drawn one at a time, each from its seed, and dropped after its forward (the audits draw
  theirs first and drop them before the outputs are made);
- the outputs and truths of all input sets are kept only where they fit in `KEPT_SHARE` of the GPU's
  memory; otherwise none is kept, and each comparison makes its set's output and truth again from the
  seed, as the spot checks of timed calls always have (`compare_timing`). That needs inputs a seed
  reproduces; a task whose inputs it does not reproduce keeps everything, as before;
- a task that still does not fit ends as `task_error` with what it needed and what the GPU had.

Peak, then, is about one input set, its forward's activations, its outputs and its float64 truth, plus the
kept outputs and truths within the share. The truth keeps twice the outputs, but while it is made holds
about twelve float64 copies of the largest tensor; where that does not fit it is made on a block of the
batch's rows (truth_rows.py, docs/design/memory.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from cuda_agent.judge.trusted import layout
from cuda_agent.task import tensor_bytes

# The share of the GPU's memory that the outputs and truths kept across a judgment's input sets may take
# (14 GB of an H200, 8 GB of an 80 GB H100): the tasks of the examples and the adversarial suite keep a few
# MB; only tasks of KernelBench's current sizes go over, and they make each set's output again instead.
# The same share bounds what the input audit holds at once (six draws of an input and their outputs:
# KernelBench's ReLU would hold 72 GiB; over it, they are made again when needed: `audit_hold_bytes`).
KEPT_SHARE = 0.10
GIB = float(1 << 30)


def private_copy(t: torch.Tensor) -> torch.Tensor:
    """A private copy of a reference output with the same strides (clone would make an expanded or
    overlapping view contiguous)."""
    t = t.detach()
    copy = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
    if layout.significant_strides(copy) == layout.significant_strides(t):
        try:
            return copy.copy_(t)
        except RuntimeError:
            pass
    return t.clone()


def kept_bytes(outputs: list[torch.Tensor], truths: list[Any] | None) -> int:
    """Bytes one input set keeps: its reference outputs and their truths (value and standard error)."""
    held = tensor_bytes(outputs)
    for t in truths or []:
        if t is not None:
            held += tensor_bytes([t.value, *([t.sigma] if t.sigma is not None else [])])
    return held


def gpu_total_bytes() -> int | None:
    """The GPU's memory, for the parent's plan of a timed round's size (decide/round_size.py); None where it
    cannot be read (the CPU tests)."""
    try:
        return int(torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory)
    except Exception:
        return None


def audit_hold_bytes(share: float = KEPT_SHARE) -> float | None:
    """What the input audit may hold of draws and outputs at once (`share` of the GPU, the share the kept
    outputs have): above it, it reads draws again from their seeds and compares outputs two at a time
    (trusted/input_audit.py). None where the GPU's memory cannot be read (the CPU tests): no limit."""
    total = gpu_total_bytes()
    return None if total is None else share * total


def keeps_every_set(per_set: int, sets: int, share: float = KEPT_SHARE, total_memory: int | None = None) -> bool:
    """Whether `sets` input sets' outputs and truths (`per_set` bytes each) fit in `share` of the GPU. A
    share of 0 keeps nothing; a GPU whose memory cannot be read (none: the CPU tests) keeps everything."""
    if share <= 0:
        return per_set == 0
    if total_memory is None:
        total_memory = gpu_total_bytes()
        if total_memory is None:
            return True
    return per_set * sets <= share * total_memory


def keep_decision(outputs: list[torch.Tensor], truths: list[Any] | None, sets: int, share: float,
                  reproduces: Callable[[], bool], sizes: dict[str, int]) -> bool:  # fmt: skip
    """After the first input set: keep every set's outputs and truths, or none (each made again from its
    seed to compare, which needs a seed that reproduces the inputs: else everything is kept, as before).
    Notes the set's sizes in `sizes` for the line a task that does not fit gets."""
    per_set = kept_bytes(outputs, truths)
    sizes.update({"its outputs": tensor_bytes(outputs), "kept per set": per_set})
    return keeps_every_set(per_set, sets, share) or not reproduces()


def check_remakeable(keep: bool, reproducible: bool, sizes: dict[str, int]) -> None:
    """Nothing kept and a seed that no longer reproduces the inputs: nothing could be compared."""
    if not keep and not reproducible:
        raise ValueError(f"the task's inputs do not reproduce from their seed, and its outputs are too large to "
                         f"keep for every input set ({sizes.get('kept per set', 0) / GIB:.2f} GiB a set)")  # fmt: skip


class TaskDoesNotFit(RuntimeError):
    """The reference's preparation or a baseline's warm-up or round ran out of GPU memory: the task needs
    more than this GPU has."""


PREPARING = "the judge holds one input set, its forward, its outputs and float64 truth at a time"
TIMING = ("the judge holds a timed round's inputs and outputs for every call, in as few calls as fit in "
          "TimingConfig.round_memory_share of the GPU (decide/round_size.py), beside the candidate's last round")  # fmt: skip


@contextlib.contextmanager
def said_in_one_line(sizes: dict[str, int], free: Callable[[], Any], holds: str = PREPARING) -> Iterator[None]:
    """Running out of GPU memory inside becomes TaskDoesNotFit with `shortage`'s line, after `free()` (the
    judgment's state dropped, so the free memory the line reports is what the GPU has without it). `holds`:
    what the judge holds at that step, for the line."""
    try:
        yield
    except torch.cuda.OutOfMemoryError as exc:
        known = dict(sizes)
        free()
        raise TaskDoesNotFit(shortage(exc, known, holds=holds)) from None


def shortage(exc: BaseException, known: dict[str, int], free_total: tuple[int, int] | None = None,
             holds: str = PREPARING) -> str:  # fmt: skip
    """One line for a task that ran out of GPU memory: what the judge had learnt of its sizes, and what the
    GPU has. `known`: bytes by what they are ("one input set", "its outputs", ...), as far as they are known.
    """
    if free_total is None:
        try:
            free_total = torch.cuda.mem_get_info()
        except Exception:  # a GPU in a bad state still gets its line
            free_total = None
    sizes = ", ".join(f"{what} {n / GIB:.2f} GiB" for what, n in known.items()) or "sizes not yet known"
    has = (f"the GPU has {free_total[1] / GIB:.1f} GiB, {free_total[0] / GIB:.1f} GiB of it free after the failure"
           if free_total else "the GPU's memory could not be read")  # fmt: skip
    first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    return f"the task does not fit in this GPU's memory ({sizes}; {holds}): {has}; torch: {first}"
