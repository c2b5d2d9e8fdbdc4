"""The drain's accounting (trusted/drain.py) with scripted probe times: a context switch is not charged,
work of another context is, and a GPU that never drains is reported so."""

import pytest

from cuda_agent.judge.trusted.drain import drain, idle_limit, switch_allowance

IDLE, SWITCH = 0.11, 0.45


def scripted(times):
    it = iter(times)
    return lambda: next(it)


def test_switch_in_probe_is_not_charged() -> None:
    got = drain(scripted([0.52, 0.12, 0.11]), IDLE, SWITCH)
    assert got["drained"] and got["busy_ms"] == 0.0 and got["probes"] == 2


def test_an_idle_gpu_without_calibration_charges_nothing() -> None:
    got = drain(scripted([0.12, 0.11]), IDLE, 0.0)
    assert got["drained"] and got["busy_ms"] == 0.0


def test_work_of_another_context_is_charged_beyond_the_allowances() -> None:
    got = drain(scripted([2.0, 1.0, 0.12, 0.11]), IDLE, SWITCH)
    expected = (2.0 - switch_allowance(SWITCH, IDLE)) + (1.0 - IDLE)
    assert got["drained"] and got["busy_ms"] == pytest.approx(expected)
    assert got["probes"] == 4


def test_without_a_calibration_the_switch_is_charged() -> None:
    """No second context (driver API missing): the safe side, the first probe's excess is charged."""
    got = drain(scripted([0.52, 0.12, 0.11]), IDLE, 0.0)
    assert got["busy_ms"] == pytest.approx(0.52 - idle_limit(IDLE))


def test_a_gpu_that_stays_busy_is_not_drained() -> None:
    got = drain(lambda: 5.0, IDLE, SWITCH, timeout_s=0.05)
    assert not got["drained"] and got["busy_ms"] >= 50
