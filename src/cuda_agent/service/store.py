"""The durable record of judgments: SQLite in WAL mode, fsynced on every commit.

A judgment is accepted only once its row (with the submission's files) is committed, so a crash after
the 202 loses nothing: on restart, `recover()` puts judgments that were running back in the queue and the
server resumes them. The first verdict recorded for a judgment is final (`finish` only updates rows not
yet done), so a retried or duplicated run can never give one judgment two verdicts. An idempotency key is
unique per client: a resubmission with the same key finds the judgment it made the first time.

States: queued -> running -> done, as a client sees them: `running` from the moment a judge starts on the
judgment (`begin`), not when it is handed to the executor's queue. `attempts` counts those starts, so a
restart costs an attempt only to the judgments that were running when the process stopped; a judgment
that keeps taking its judge down ends as `judge_error` after a bounded number of tries (see jobs.py).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_agent.judge.decide.verdict import json_safe

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgments (
    id TEXT PRIMARY KEY,
    client TEXT NOT NULL,
    idempotency_key TEXT,
    digest TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done')),
    attempts INTEGER NOT NULL DEFAULT 0,
    submitted REAL NOT NULL,
    started REAL,
    finished REAL,
    task_name TEXT,
    payload BLOB,
    result TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS judgments_key ON judgments (client, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS judgments_state ON judgments (state, submitted);
"""


class KeyConflict(ValueError):
    """The idempotency key was used before for a different submission."""

    def __init__(self, judgment_id: str | None, key: str | None = None) -> None:
        super().__init__(f"idempotency key already used for judgment {judgment_id} with different content"
                         if judgment_id else f"idempotency key {key!r} used twice in one batch, for different content")
        self.judgment_id = judgment_id


@dataclass(frozen=True)
class Record:
    id: str
    state: str
    attempts: int
    submitted: float
    started: float | None
    finished: float | None
    task_name: str | None
    result: dict[str, Any] | None
    client: str = ""  # the tenant (a short hash of its token): for logs, never in the API's answer

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "state": self.state, "attempts": self.attempts, "task": self.task_name,
            "submitted": self.submitted, "started": self.started, "finished": self.finished,
        }  # fmt: skip
        if self.result is not None:
            out.update(self.result)  # status, reward, reason, verdict (the JudgeOutcome fields)
        return out


class Store:
    """One SQLite database; safe to use from many threads (one connection, serialised by a lock)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # the commit is on disk before the 202 goes out
            self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ---- accepting ------------------------------------------------------------------------------
    def add(self, client: str, digest: str, payload: bytes, task_name: str | None, key: str | None = None) -> str:
        """Record a new judgment (committed and fsynced when this returns); its id."""
        judgment_id = secrets.token_hex(12)
        with self._lock:
            self._db.execute(
                "INSERT INTO judgments (id, client, idempotency_key, digest, state, submitted, task_name, payload)"
                " VALUES (?, ?, ?, ?, 'queued', ?, ?, ?)",
                (judgment_id, client, key, digest, time.time(), task_name, payload),
            )
        return judgment_id

    def find(self, client: str, key: str) -> tuple[str, str] | None:
        """(id, content digest) of the judgment this client made with idempotency key `key`."""
        with self._lock:
            row = self._db.execute(
                "SELECT id, digest FROM judgments WHERE client = ? AND idempotency_key = ?", (client, key)
            ).fetchone()
        return (row[0], row[1]) if row else None

    # ---- running --------------------------------------------------------------------------------
    def pending(self, judgment_id: str) -> tuple[bytes, int] | None:
        """The payload of an unfinished judgment and the attempts it has used so far (None when done).
        Handing a judgment to the executor is not an attempt: only `begin` counts one."""
        with self._lock:
            row = self._db.execute(
                "SELECT payload, attempts FROM judgments WHERE id = ? AND state != 'done'", (judgment_id,)
            ).fetchone()
        return (row[0], row[1]) if row else None

    def begin(self, judgment_id: str) -> int | None:
        """Mark a queued judgment running, the moment a judge starts on it: one more attempt, its new
        count; None when it is not queued (done, or running already)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                cursor = self._db.execute(
                    "UPDATE judgments SET state = 'running', attempts = attempts + 1, started = ?"
                    " WHERE id = ? AND state = 'queued'",
                    (time.time(), judgment_id),
                )
                row = self._db.execute("SELECT attempts FROM judgments WHERE id = ?", (judgment_id,)).fetchone()
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return row[0] if cursor.rowcount == 1 and row else None

    def requeue(self, judgment_id: str) -> None:
        """Back to the queue (its judge died); the attempt it used stays counted."""
        with self._lock:
            self._db.execute("UPDATE judgments SET state = 'queued' WHERE id = ? AND state = 'running'", (judgment_id,))

    def finish(self, judgment_id: str, result: dict[str, Any]) -> bool:
        """Record the verdict unless one is recorded already; True when this one is the verdict."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE judgments SET state = 'done', finished = ?, result = ?, payload = NULL"
                " WHERE id = ? AND state != 'done'",
                (time.time(), json.dumps(json_safe(result), sort_keys=True, allow_nan=False), judgment_id),
            )
            return cursor.rowcount == 1

    def recover(self) -> list[str]:
        """After a restart: judgments left running go back to the queue (the attempt they used stays
        counted; a queued one never started, so it has used none); all unfinished ids, oldest first."""
        with self._lock:
            self._db.execute("UPDATE judgments SET state = 'queued' WHERE state = 'running'")
            rows = self._db.execute(
                "SELECT id FROM judgments WHERE state = 'queued' ORDER BY submitted, rowid"
            ).fetchall()
        return [r[0] for r in rows]

    # ---- reading --------------------------------------------------------------------------------
    def get(self, judgment_id: str, client: str | None = None) -> Record | None:
        """The judgment, if it exists (and belongs to `client` when one is given)."""
        query = ("SELECT id, state, attempts, submitted, started, finished, task_name, result, client FROM judgments"
                 " WHERE id = ?")  # fmt: skip
        args: tuple[Any, ...] = (judgment_id,)
        if client is not None:
            query += " AND client = ?"
            args += (client,)
        with self._lock:
            row = self._db.execute(query, args).fetchone()
        if row is None:
            return None
        # A row written before verdicts were strict JSON may hold Infinity or NaN, which no client can read: null
        # (the hook runs only on those constants, so a poll of a clean row pays nothing for it).
        return Record(*row[:7], json.loads(row[7], parse_constant=lambda _: None) if row[7] else None, row[8])

    def counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT state, COUNT(*) FROM judgments GROUP BY state").fetchall()
        return {"queued": 0, "running": 0, "done": 0, **dict(rows)}
