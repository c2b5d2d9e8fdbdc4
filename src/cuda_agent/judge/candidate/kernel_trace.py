"""Candidate side: the GPU kernels that ran during one call or one round of timed calls (CUPTI, via Kineto).

Runs inside the candidate's process, so what it reports is evidence the parent weighs, not a verdict: the
parent classifies the kernels (coverage.py) against the extension's device code, which it read from the
built binary itself. Every verification call is traced, and timed rounds the parent picks at random after
each round's draw (same command, arguments, fresh inputs and sampler as every round), so behaving honestly
only on the calls that are looked at means behaving honestly on rounds that look like every timed round.
What remains visible here during a traced round (the profiler's own state) is listed in
docs/design/trust_boundary.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
# The judge's own kernels in a traced round of timed calls: its pad/flush (pad.py), or the fallback's
# torch.cuda._sleep spin and zero_() flush. Not the candidate's work (`device_busy_us`).
JUDGE_OWN = re.compile(r"^judge_pad_flush$|spin_kernel|FillFunctor")


def device_kernels(prof: Any) -> dict[str, float]:
    """Device microseconds by kernel (and memcpy/memset) name from a finished torch profiler session.

    Read from the session's raw Kineto events (`raw_device_kernels`): `prof.events()` would first build
    torch's whole FunctionEvent tree in Python, 10-25 ms a session for the ~150 events of a timed round,
    paid in every traced round and verification call. Same figures (see `events_device_kernels`, which
    it falls back to where the raw results are not reachable)."""
    raw = raw_device_kernels(prof)
    return raw if raw is not None else events_device_kernels(prof)


def events_device_kernels(prof: Any) -> dict[str, float]:
    """`device_kernels` through torch's parsed events: device_time_total of every CUDA-side event."""
    kernels: dict[str, float] = {}
    for event in prof.events():
        device_type = getattr(event, "device_type", None)
        if device_type is not None and "CUDA" in str(device_type):
            kernels[event.name] = kernels.get(event.name, 0.0) + float(event.device_time_total)
    return kernels


def raw_device_kernels(prof: Any) -> dict[str, float] | None:
    """`device_kernels` from the raw Kineto events, with torch's own parsing rules for device events (names
    demangled, utility and hidden events skipped, asynchronous ones counted as 0); None if unavailable."""
    import torch

    try:
        from torch.autograd.profiler import _filter_name

        results = prof.profiler.kineto_results
        if results is None:
            return None
        names: dict[str, str] = {}
        kernels: dict[str, float] = {}
        for event in results.events():
            if "CUDA" not in str(event.device_type()):
                continue
            raw_name = event.name()
            # as torch's parser does: is_hidden_event is missing on older builds (torch 2.11 among them)
            if _filter_name(raw_name) or getattr(event, "is_hidden_event", lambda: False)():
                continue
            name = names.get(raw_name)
            if name is None:
                name = names[raw_name] = torch._C._demangle(raw_name) if len(raw_name) > 1 else raw_name
            asynchronous = event.is_async() or event.start_thread_id() != event.end_thread_id()
            took = 0.0 if asynchronous else (event.end_ns() - event.start_ns()) / 1000
            kernels[name] = kernels.get(name, 0.0) + took
        return kernels
    except (AttributeError, ImportError, TypeError):  # another torch's profiler internals: the parsed path
        return None


def device_busy_us(prof: Any) -> float | None:
    """Microseconds in which the GPU ran anything but the judge's own kernels (`JUDGE_OWN`): the union of
    the other device events' intervals, so kernels overlapping on several streams count once. In a traced
    round of timed calls that is the candidate's work, which its calls' events (start to end) enclose;
    the parent compares it with untraced rounds' times (decide/observed_timing.py). None if unavailable."""
    import torch

    try:
        from torch.autograd.profiler import _filter_name

        results = prof.profiler.kineto_results
        if results is None:
            return None
        spans = []
        for event in results.events():
            if "CUDA" not in str(event.device_type()) or event.is_async():
                continue
            raw = event.name()
            if _filter_name(raw) or getattr(event, "is_hidden_event", lambda: False)():  # as device_kernels
                continue
            name = torch._C._demangle(raw) if len(raw) > 1 else raw
            if not JUDGE_OWN.search(name):
                spans.append((event.start_ns(), event.end_ns()))
    except (AttributeError, ImportError, TypeError):
        return None
    busy, reach = 0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            busy += end - start
            reach = end
        elif end > reach:
            busy += end - reach
            reach = end
    return busy / 1000


def traced(call: Callable[[], T], busy: list[float] | None = None) -> tuple[T, dict[str, float]]:
    """Run `call` with CUDA activity tracing on; the device is drained before and after, so the kernels
    are exactly those `call` launched (on any stream of this process). With `busy`, the device time not in
    the judge's own kernels is appended to it too (`device_busy_us`, where available)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        result = call()
        torch.cuda.synchronize()
    if busy is not None and (found := device_busy_us(prof)) is not None:
        busy.append(found)
    return result, device_kernels(prof)


def warm_profiler() -> None:
    """One CUDA profiler session around a tiny op, in whichever worker calls it.

    The first session in a process costs seconds (CUPTI's start-up) that would otherwise land on the
    coverage gate. And a process that has used the profiler is not the process it was: the candidate's
    worker traces its verification calls and some of its timed rounds, and on the H200 (2026-12-02) its
    per-call host overhead sat 0.01-0.045 ms above the reference worker's, which had never traced, in every
    judgment and every kind of round alike; a one-off probe (scripts/device/host_overhead_probe.py, in git
    history only) saw a process's rounds get slower once it had profiled. The host clock reads that gap as
    the candidate's own cost (and charged honest kernels for it, up to 56 of 60 rounds), so the reference's
    worker runs this too: when it is warmed, and before it times anything in a judgment, as the candidate's
    worker is traced in each."""
    import torch

    traced(lambda: torch.ones(8, device="cuda").add_(1))
