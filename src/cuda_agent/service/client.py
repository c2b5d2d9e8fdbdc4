"""`RemoteJudge`: the judge server as the agent, RL and evaluation code see the local judge.

- `RemoteJudge(url)(workspace, task) -> JudgeOutcome`: the `Judge` seam of agent/judging.py;
- `.judge(folder, task) -> Verdict` and `.judge_many(items, task) -> Iterator[(index, Verdict)]`: the
  `JudgeService` interface (verdicts in completion order; a judgment the server could not judge comes back
  as a `runtime_error` verdict "judge error: ...", as the local service reports its own failures).

Every submission carries an idempotency key derived from its content and a per-client nonce, so a retry
after a timeout or a dropped connection finds the judgment it made instead of judging twice. Connection
errors, 429 (honouring Retry-After) and 5xx are retried with backoff up to `retries` times; waiting uses
the server's long poll, bounded overall by `timeout_s`.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import httpx

from cuda_agent.agent.judging import JUDGE_ERROR, UNAVAILABLE, JudgeOutcome
from cuda_agent.service.auth import CLIENT_TOKEN_ENV
from cuda_agent.service.submission import Submission, from_folder
from cuda_agent.task import Task


class RemoteJudgeError(RuntimeError):
    """The server refused the request or could not be reached within the retries."""


class RemoteJudge:
    def __init__(self, url: str, token: str | None = None, timeout_s: float = 3600.0, retries: int = 5,
                 concurrency: int = 8, poll_s: float = 30.0) -> None:  # fmt: skip
        self.url = url.rstrip("/")
        if not self.url.endswith("/v1"):
            self.url += "/v1"
        token = token or os.environ.get(CLIENT_TOKEN_ENV)
        if not token:
            raise RemoteJudgeError(f"no token for {self.url}: pass token= or set {CLIENT_TOKEN_ENV}")
        self.timeout_s, self.retries, self.concurrency, self.poll_s = timeout_s, retries, concurrency, poll_s
        self._http = httpx.Client(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx.Timeout(30.0, read=poll_s + 30.0))  # fmt: skip
        self._nonce = secrets.token_hex(8)  # keys are this client's: equal content elsewhere is judged anew

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RemoteJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the Judge seam -------------------------------------------------------------------------------
    def __call__(self, workspace: Path, task: Task) -> JudgeOutcome:
        try:
            record = self.wait(self.submit(from_folder(Path(workspace), task)))
        except RemoteJudgeError as exc:
            return JudgeOutcome(UNAVAILABLE, None, str(exc))
        return JudgeOutcome(record["status"], record.get("reward"), record.get("reason", ""), record.get("verdict"))

    # ---- the JudgeService interface ---------------------------------------------------------------------
    def judge(self, submission: Path, task: Task | None = None) -> Any:
        return self._verdict(self.wait(self.submit(from_folder(Path(submission), task))))

    def judge_many(self, items: Iterable[Path | tuple[Path, Task | None]], task: Task | None = None
                   ) -> Iterator[tuple[int, Any]]:  # fmt: skip
        work = [(Path(i[0]), i[1]) if isinstance(i, tuple) else (Path(i), task) for i in items]
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="remote-judge") as pool:
            futures = {pool.submit(self.judge, folder, given): index for index, (folder, given) in enumerate(work)}
            for future in as_completed(futures):
                yield futures[future], future.result()

    # ---- HTTP ---------------------------------------------------------------------------------------
    def submit(self, submission: Submission, key: str | None = None) -> str:
        """The judgment's id. Retries reuse one idempotency key, so the server judges it once. `key`
        replaces this client's (nonce + content) key, for callers whose retries outlive the client: a
        resumed evaluation names each episode's judgment so a restarted process finds it again."""
        key = key or f"{self._nonce}-{submission.digest()[:40]}"
        body = {"files": {p: b.decode("utf-8", "replace") for p, b in submission.files.items()},
                "task": submission.task_source, "task_name": submission.task_name}  # fmt: skip
        reply = self._request("POST", "/judgments", json=body, headers={"Idempotency-Key": key})
        return reply["id"]

    def wait(self, judgment_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RemoteJudgeError(f"no verdict for judgment {judgment_id} within {self.timeout_s:.0f} s")
            record = self._request("GET", f"/judgments/{judgment_id}", params={"wait": min(self.poll_s, left)})
            if record["state"] == "done":
                return record

    def _request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        delay = 0.5
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._http.request(method, self.url + path, **kw)
            except httpx.TransportError as exc:
                if last:
                    raise RemoteJudgeError(f"cannot reach the judge at {self.url}: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 30)
                continue
            if response.status_code in (429, 502, 503, 504) or response.status_code >= 500:
                if last:
                    raise RemoteJudgeError(f"{method} {path}: {response.status_code} {_error(response)}")
                wait = response.headers.get("retry-after")
                time.sleep(float(wait) if wait and wait.isdigit() else delay)
                delay = min(delay * 2, 30)
                continue
            if response.status_code >= 400:
                raise RemoteJudgeError(f"{method} {path}: {response.status_code} {_error(response)}")
            return response.json()
        raise AssertionError("unreachable")

    @staticmethod
    def _verdict(record: dict[str, Any]) -> Any:
        from cuda_agent.judge import Status, failure
        from cuda_agent.service.wire import verdict_from_dict

        if record["status"] == JUDGE_ERROR or record.get("verdict") is None:
            return failure(Status.RUNTIME_ERROR, f"judge error: {record.get('reason', 'no verdict')}")
        return verdict_from_dict(record["verdict"])


def _error(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error", response.text[:300]))
    except ValueError:
        return response.text[:300]
