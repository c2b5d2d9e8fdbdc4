"""Restarts over real server processes: a graceful restart (SIGTERM) costs no attempt to a judgment that
never started, and the API shows the real states (`queued` while waiting, `running` once a judge has it)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.service.helpers import Server, instant, slow

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _states(srv: Server, ids: list[str]) -> list[dict]:
    return [srv.http.get(f"/judgments/{i}").json() for i in ids]


def _wait_running(srv: Server, judgment_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = srv.http.get(f"/judgments/{judgment_id}").json()
        if record["state"] != "queued":
            return record
        time.sleep(0.05)
    raise AssertionError(f"{judgment_id} never started")


def test_graceful_restarts_cost_queued_judgments_no_attempt(tmp_path: Path) -> None:
    """One slow judgment holds the single CPU worker, five instant ones wait behind it. Three graceful
    restarts later every waiting judgment has used exactly one attempt (its own run) and has its real
    verdict, not judge_error; while waiting it read `queued` with 0 attempts."""
    folder = tmp_path / "srv"
    args = ("--max-pending", "16", "--max-attempts", "5")
    srv = Server(folder, *args)
    try:
        holder = srv.http.post("/judgments", json=slow(1)).json()["id"]
        waiting = [srv.http.post("/judgments", json=instant(n)).json()["id"] for n in range(5)]
        running = _wait_running(srv, holder)
        assert running["state"] == "running" and running["attempts"] == 1
        for record in _states(srv, waiting):
            assert (record["state"], record["attempts"]) == ("queued", 0), record
    finally:
        srv.stop()
    for _ in range(3):
        srv = Server(folder, *args)
        try:
            if _wait_running(srv, holder)["state"] == "running":  # the slow one again holds the worker
                for record in _states(srv, waiting):
                    assert (record["state"], record["attempts"]) == ("queued", 0), record
        finally:
            srv.stop()
    srv = Server(folder, *args)
    try:
        records = [srv.wait_done(i) for i in waiting]
        assert [(r["status"], r["attempts"]) for r in records] == [("task_error", 1)] * 5
        held = srv.wait_done(holder)
        assert held["status"] == "compile_error" and 1 <= held["attempts"] <= 5
    finally:
        srv.stop()


def test_a_graceful_stop_answers_long_polls_instead_of_cancelling_them(tmp_path: Path) -> None:
    """A poll waiting for a verdict when SIGTERM comes gets the judgment's state at once. Before, it waited
    on into uvicorn's 5 s grace, was cancelled and logged as a 500 (seen on an H100, 2026-12-05: 8 polls
    per restart of the fault benchmark)."""
    import threading

    srv = Server(tmp_path / "srv", "--max-pending", "8")
    answers: list[tuple[int, dict]] = []
    try:
        holder = srv.http.post("/judgments", json=slow(2)).json()["id"]
        last = [srv.http.post("/judgments", json=slow(3 + n)).json()["id"] for n in range(4)][-1]
        _wait_running(srv, holder)

        def poll() -> None:  # the last of five slow judgments: seconds from a verdict
            reply = srv.http.get(f"/judgments/{last}", params={"wait": 50})
            answers.append((reply.status_code, reply.json()))

        streamed: list[str] = []

        def stream() -> None:  # its server-sent events: the stream must end, not spin until cancelled
            streamed.append(srv.http.get(f"/judgments/{last}/events").text)

        threads = [threading.Thread(target=poll), threading.Thread(target=stream)]
        for thread in threads:
            thread.start()
        time.sleep(1.0)  # the poll and the stream are waiting in the server
        began = time.monotonic()
        srv.proc.terminate()
        for thread in threads:
            thread.join(30)
        waited = time.monotonic() - began
    finally:
        srv.stop()
    assert answers and answers[0][0] == 200, answers
    assert answers[0][1]["state"] == "queued", answers
    assert streamed and "event: state" in streamed[0] and "event: verdict" not in streamed[0], streamed
    assert waited < 2.5, f"the poll and the stream ended {waited:.1f} s after SIGTERM (the grace is 5 s)"
    assert "Exception in ASGI application" not in srv.read_log()


def test_a_verdict_stored_with_infinity_is_served_as_strict_json(tmp_path: Path) -> None:
    """A server before verdicts were strict JSON stored an `inf` figure as `Infinity`; its strict encoder then
    answered every poll of that judgment with a 500, so the client never got the verdict (the H100 fault run,
    2026-12-05). A server started on such a database serves it, the figure as null."""
    import json
    import sqlite3

    folder = tmp_path / "srv"
    srv = Server(folder)
    try:
        judgment = srv.http.post("/judgments", json=instant(7)).json()["id"]
        done = srv.wait_done(judgment)
    finally:
        srv.stop()
    db = sqlite3.connect(folder / "data" / "judgments.sqlite")
    (stored,) = db.execute("SELECT result FROM judgments WHERE id = ?", (judgment,)).fetchone()
    result = json.loads(stored)
    result["verdict"]["checks"]["figure"] = float("inf")  # as json.dumps wrote it by default: Infinity
    db.execute("UPDATE judgments SET result = ? WHERE id = ?", (json.dumps(result), judgment))
    db.commit()
    db.close()
    srv = Server(folder)
    try:
        reply = srv.http.get(f"/judgments/{judgment}")
        events = srv.http.get(f"/judgments/{judgment}/events").text
    finally:
        srv.stop()
    assert reply.status_code == 200, reply.text[:300]
    assert "Infinity" not in reply.text and "Infinity" not in events
    record = reply.json()
    assert record["verdict"]["checks"]["figure"] is None and record["status"] == done["status"]
