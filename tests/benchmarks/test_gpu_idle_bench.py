"""benchmarks/gpu_idle.py: the idle share's arithmetic, its verdict against issue 34's < 15% target, the
NVML structures' layout (as nvml.h lays them out), the sampler thread, and the answer where NVML is absent.

No GPU here: the reader in the sampler tests stands in for NVML, the one boundary these tests cannot reach;
the absent-NVML test loads a real (missing) library through ctypes."""

from __future__ import annotations

import ctypes
import threading

import pytest

from tests.benchmark_module import load_benchmark

idle = load_benchmark("gpu_idle")


def test_the_idle_share_is_the_share_of_samples_at_zero() -> None:
    samples = [(1_000, 0.0), (2_000, 35.0), (3_000, 100.0), (4_000, 0.0)]
    figures = idle.aggregate(samples)
    assert figures["samples"] == 4 and figures["idle_samples"] == 2 and figures["idle_share"] == 0.5
    assert figures["mean_utilization"] == 33.75 and figures["idle_time_share"] == 0.6625
    assert figures["median_gap_ms"] == 1.0  # timestamps are microseconds


def test_short_gaps_show_in_the_time_share_not_in_the_samples_at_zero() -> None:
    # 200 ms samples, each with a ~40 ms gap between timed windows: no sample reads 0 %, a fifth is idle
    figures = idle.aggregate([(t * 200_000, 80.0) for t in range(50)])
    assert figures["idle_share"] == 0.0 and figures["idle_time_share"] == 0.2
    passed, text = idle.idle_verdict("batch", figures, 0.15)
    assert passed is False and "20.0% of the time" in text and "0.0% of 50 samples at 0%" in text


def test_a_sample_read_twice_counts_once_and_nonsense_is_dropped() -> None:
    # overlapping reads of the driver's buffer hand the same timestamp back: the period weighs once
    samples = [(10, 0.0), (10, 0.0), (20, 80.0), (30, 101.0), (40, -1.0)]
    figures = idle.aggregate(samples)
    assert figures["samples"] == 2 and figures["idle_samples"] == 1 and figures["idle_share"] == 0.5
    assert figures["invalid"] == 2


def test_no_samples_give_no_share() -> None:
    figures = idle.aggregate([])
    assert figures["idle_share"] is None and figures["idle_time_share"] is None and figures["samples"] == 0


def test_a_gpu_always_busy_has_both_shares_zero() -> None:
    figures = idle.aggregate([(t, 100.0) for t in range(0, 100_000, 40_000)])
    assert figures["idle_share"] == 0.0 and figures["idle_time_share"] == 0.0 and figures["idle_samples"] == 0


def test_the_verdict_is_on_the_time_share_strictly_below_the_target() -> None:
    below = {"idle_time_share": 0.1499, "idle_share": 0.0, "samples": 10}
    assert idle.idle_verdict("batch", below, 0.15)[0] is True
    at = {"idle_time_share": 0.15, "idle_share": 0.1, "samples": 10, "source": "s"}
    passed, text = idle.idle_verdict("batch", at, 0.15)
    assert passed is False and "15.0% of the time" in text and "target < 15% of the time" in text


def test_an_unmeasured_share_neither_passes_nor_fails_and_says_why() -> None:
    unmeasured = {"idle_share": None, "idle_time_share": None, "note": "NVML unavailable: no library"}
    passed, text = idle.idle_verdict("batch", unmeasured, 0.15)
    assert passed is None and "not measured" in text and "NVML unavailable" in text


def test_the_ctypes_structures_match_nvml_h() -> None:
    # nvmlSample_t {unsigned long long timeStamp; nvmlValue_t sampleValue;}, nvmlValue_t an 8-byte union,
    # nvmlUtilization_t {unsigned int gpu; unsigned int memory;}
    assert ctypes.sizeof(idle._Value) == 8
    assert ctypes.sizeof(idle._Sample) == 16
    assert idle._Sample.timeStamp.offset == 0 and idle._Sample.sampleValue.offset == 8
    assert ctypes.sizeof(idle._Utilization) == 8 and idle._Utilization.gpu.offset == 0
    value = idle._Value()
    value.uiVal = 42
    assert getattr(value, idle.VALUE_FIELDS[1]) == 42  # NVML_VALUE_TYPE_UNSIGNED_INT


def test_without_nvml_the_reader_is_none_and_the_figures_null() -> None:
    reader, note = idle.open_reader(library="libnvidia-ml-absent-on-purpose.so.1")
    assert reader is None and note.startswith("NVML unavailable")
    sampler = idle.IdleSampler(reader, note).start()
    figures = sampler.stop()
    assert figures["idle_share"] is None and figures["idle_time_share"] is None and figures["source"] is None
    assert figures["note"].startswith("NVML unavailable")


class ScriptedReader:
    """Stands in for NVML: hands out prepared batches of samples, one per read, then nothing."""

    source = "scripted"

    def __init__(self, batches: list[list[tuple[int, float]]], fail_on: int | None = None) -> None:
        self.batches, self.fail_on, self.reads = list(batches), fail_on, 0
        self.polled = threading.Event()

    def read(self) -> list[tuple[int, float]]:
        self.reads += 1
        if self.reads >= 3:
            self.polled.set()
        if self.fail_on == self.reads:
            raise OSError("nvmlDeviceGetSamples returned NVML error 999")
        return self.batches.pop(0) if self.batches else []


def test_the_sampler_drops_the_backlog_polls_on_its_thread_and_reads_once_more_at_stop() -> None:
    backlog = [(t, 0.0) for t in range(1, 50)]  # another phase's idle samples, waiting in the buffer
    reader = ScriptedReader([backlog, [(100, 0.0), (200, 90.0)], [(300, 90.0)], [(400, 90.0)]])
    sampler = idle.IdleSampler(reader, interval_s=0.005).start()
    assert reader.polled.wait(5), "the sampler thread never polled"
    figures = sampler.stop()
    assert figures["samples"] == 4 and figures["idle_samples"] == 1 and figures["idle_share"] == 0.25
    assert figures["source"] == "scripted" and figures["note"] == ""
    assert not sampler._thread.is_alive()


def test_a_failed_poll_is_a_gap_named_in_the_note() -> None:
    # read 1 drains the backlog, read 2 gets a sample, read 3 fails, stop()'s last read gets the other
    reader = ScriptedReader([[], [(100, 0.0)], [(200, 50.0)]], fail_on=3)
    sampler = idle.IdleSampler(reader, interval_s=0.005).start()
    assert reader.polled.wait(5)
    figures = sampler.stop()
    assert figures["samples"] == 2 and figures["idle_share"] == 0.5
    assert "NVML error 999" in figures["note"]


def test_the_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval_s"):
        idle.IdleSampler(None, interval_s=0)


class WholeBufferNvml:
    """Stands in for NVML's samples call on a driver that hands back its whole buffer, whatever the
    lastSeenTimeStamp: the reader must keep only what is newer than what it has seen."""

    def __init__(self) -> None:
        self.buffer = [(100, 0.0), (200, 0.0)]  # before the phase

    def samples(self, last_seen: int) -> list[tuple[int, float]]:
        return list(self.buffer)


def test_the_samples_reader_skips_the_past_and_never_counts_a_sample_twice() -> None:
    nvml = WholeBufferNvml()
    reader = idle.SamplesReader(nvml)
    assert reader.read() == []
    nvml.buffer += [(300, 40.0), (400, 0.0)]
    assert reader.read() == [(300, 40.0), (400, 0.0)]
    nvml.buffer += [(500, 90.0)]
    assert reader.read() == [(500, 90.0)] and reader.last_seen == 500
