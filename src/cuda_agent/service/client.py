"""`RemoteJudge`: the judge server as the agent, RL and evaluation code see the local judge.

- `RemoteJudge(url)(workspace, task) -> JudgeOutcome`: the `Judge` seam of agent/judging.py;
- `.judge(folder, task) -> Verdict` and `.judge_many(items, task) -> Iterator[(index, Verdict)]`: the
  `JudgeService` interface (verdicts in completion order; a judgment the server could not judge comes back
  as a `runtime_error` verdict "judge error: ...", as the local service reports its own failures).

Every submission carries an idempotency key derived from its content and a per-client nonce, so a retry
after a timeout or a dropped connection finds the judgment it made instead of judging twice. Connection
errors, 429 (honouring Retry-After, capped at `max_retry_after_s`) and 5xx are retried with backoff up to
`retries` times; waiting uses the server's long poll, bounded overall by `timeout_s`.

It gives what the local judge gives: a submission the server refuses as too large or malformed (400/413)
is a `compile_error` verdict with reward -1 and the server's reason, as the local build refuses it (too
many or too large kernel files). Files go byte for byte: text as JSON strings, anything that is not UTF-8
as base64 (`files_base64`). A server that answers nonsense (not JSON, wrong shape, over
`MAX_RESPONSE_BYTES`) is a `RemoteProtocolError` with a short message, never a raw exception.
"""

from __future__ import annotations

import base64
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

MAX_RESPONSE_BYTES = 16 << 20  # a verdict is a few KiB: anything near this is not a judge server's answer
REFUSED_SUBMISSION = (400, 413)  # the submission itself is unacceptable: the local build refuses it too


class RemoteJudgeError(RuntimeError):
    """The server refused the request or could not be reached within the retries."""


class RemoteProtocolError(RemoteJudgeError):
    """The server answered something that is not this API's answer (bad JSON, wrong shape, too large)."""


class SubmissionRefused(RemoteJudgeError):
    """The server refused the submission itself (400/413): judged as the local build judges it."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"the judge server refused the submission ({status}): {reason}")
        self.status, self.reason = status, reason

    def verdict(self) -> Any:
        from cuda_agent.judge import Status, failure

        return failure(Status.COMPILE_ERROR, str(self))


class RemoteJudge:
    def __init__(self, url: str, token: str | None = None, timeout_s: float = 3600.0, retries: int = 5,
                 concurrency: int = 8, poll_s: float = 30.0, max_retry_after_s: float = 60.0) -> None:  # fmt: skip
        self.url = url.rstrip("/")
        if not self.url.endswith("/v1"):
            self.url += "/v1"
        token = token or os.environ.get(CLIENT_TOKEN_ENV)
        if not token:
            raise RemoteJudgeError(f"no token for {self.url}: pass token= or set {CLIENT_TOKEN_ENV}")
        self.timeout_s, self.retries, self.concurrency, self.poll_s = timeout_s, retries, concurrency, poll_s
        self.max_retry_after_s = max_retry_after_s
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
            self._verdict(record)  # an answer that does not parse is the server's fault, said as such
        except SubmissionRefused as exc:
            verdict = exc.verdict()
            return JudgeOutcome(verdict.status.value, verdict.reward, verdict.reason, verdict.to_dict())
        except RemoteProtocolError as exc:
            return JudgeOutcome(JUDGE_ERROR, None, str(exc))
        except RemoteJudgeError as exc:
            return JudgeOutcome(UNAVAILABLE, None, str(exc))
        return JudgeOutcome(record["status"], record.get("reward"), record.get("reason", ""), record.get("verdict"))

    # ---- the JudgeService interface ---------------------------------------------------------------------
    def judge(self, submission: Path, task: Task | None = None) -> Any:
        try:
            judgment_id = self.submit(from_folder(Path(submission), task))
        except SubmissionRefused as exc:
            return exc.verdict()
        return self._verdict(self.wait(judgment_id))

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
        body = {**_files_body(submission.files), "task": submission.task_source, "task_name": submission.task_name}
        try:
            reply = self._request("POST", "/judgments", json=body, headers={"Idempotency-Key": key})
        except _Refused as exc:
            if exc.status in REFUSED_SUBMISSION:
                raise SubmissionRefused(exc.status, exc.reason) from None
            raise
        judgment_id = reply.get("id")
        if not isinstance(judgment_id, str) or not judgment_id:
            raise RemoteProtocolError(f"POST /judgments: the answer has no judgment id: {_short(reply)}")
        return judgment_id

    def wait(self, judgment_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RemoteJudgeError(f"no verdict for judgment {judgment_id} within {self.timeout_s:.0f} s")
            record = self._request("GET", f"/judgments/{judgment_id}", params={"wait": min(self.poll_s, left)})
            state = record.get("state")
            if state not in ("queued", "running", "done"):
                raise RemoteProtocolError(f"judgment {judgment_id}: no known state in the answer: {_short(record)}")
            if state == "done":
                return record

    def _request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        delay = 0.5
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._send(method, self.url + path, **kw)
            except httpx.TransportError as exc:
                if last:
                    raise RemoteJudgeError(f"cannot reach the judge at {self.url}: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 30)
                continue
            if response.status_code in (429, 502, 503, 504) or response.status_code >= 500:
                if last:
                    raise RemoteJudgeError(f"{method} {path}: {response.status_code} {_error(response)}")
                time.sleep(self._pause(response.headers.get("retry-after"), delay))
                delay = min(delay * 2, 30)
                continue
            if response.status_code >= 400:
                raise _Refused(response.status_code, _error(response), f"{method} {path}")
            try:
                answer = response.json()
            except ValueError:
                raise RemoteProtocolError(f"{method} {path}: the answer is not JSON: {response.text[:200]!r}") from None
            if not isinstance(answer, dict):
                raise RemoteProtocolError(f"{method} {path}: the answer is not a JSON object: {_short(answer)}")
            return answer
        raise AssertionError("unreachable")

    def _send(self, method: str, url: str, **kw: Any) -> httpx.Response:
        """The response, its body read up to MAX_RESPONSE_BYTES (a larger one is not this API's)."""
        with self._http.stream(method, url, **kw) as response:
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_RESPONSE_BYTES:
                    raise RemoteProtocolError(f"{method} {url}: the answer is over {MAX_RESPONSE_BYTES >> 20} MiB")
        return httpx.Response(response.status_code, headers=response.headers, content=bytes(body),
                              request=response.request)  # fmt: skip

    def _pause(self, retry_after: str | None, backoff: float) -> float:
        """Seconds to wait before a retry: the server's Retry-After (seconds) when it gives one, capped
        at `max_retry_after_s` (a server asking for an hour must not stall a trainer for one)."""
        try:
            asked = float(retry_after) if retry_after is not None else backoff
        except ValueError:
            asked = backoff
        if not asked >= 0:  # NaN or negative
            asked = backoff
        return min(asked, self.max_retry_after_s)

    @staticmethod
    def _verdict(record: dict[str, Any]) -> Any:
        from cuda_agent.judge import Status, failure
        from cuda_agent.service.wire import verdict_from_dict

        _checked_outcome(record)
        if record["status"] == JUDGE_ERROR or record.get("verdict") is None:
            return failure(Status.RUNTIME_ERROR, f"judge error: {record.get('reason', 'no verdict')}")
        try:
            return verdict_from_dict(record["verdict"])
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise RemoteProtocolError(f"judgment {record.get('id')}: the verdict does not parse ({type(exc).__name__}: "
                                      f"{_short(exc)}): {_short(record['verdict'])}") from None  # fmt: skip


class _Refused(RemoteJudgeError):
    """A 4xx answer (inside the client: `submit` turns 400/413 into SubmissionRefused)."""

    def __init__(self, status: int, reason: str, what: str) -> None:
        super().__init__(f"{what}: {status} {reason}")
        self.status, self.reason = status, reason


def _files_body(files: Any) -> dict[str, dict[str, str]]:
    """`files` as JSON: UTF-8 text as strings (what every server version reads), other bytes as base64
    under `files_base64`, so nothing is altered on the way."""
    text: dict[str, str] = {}
    binary: dict[str, str] = {}
    for path, data in files.items():
        try:
            text[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            binary[path] = base64.b64encode(data).decode("ascii")
    return {"files": text, "files_base64": binary} if binary else {"files": text}


def _checked_outcome(record: dict[str, Any]) -> None:
    """A done judgment carries a status string, a reward (int or null) and a verdict (object or null)."""
    ok = (isinstance(record.get("status"), str) and (record.get("reward") is None or isinstance(record.get("reward"), int))
          and (record.get("verdict") is None or isinstance(record.get("verdict"), dict))
          and isinstance(record.get("reason", ""), str))  # fmt: skip
    if not ok:
        raise RemoteProtocolError(f"judgment {record.get('id')}: not a judgment outcome: {_short(record)}")


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _error(response: httpx.Response) -> str:
    try:
        answer = response.json()
    except ValueError:
        return response.text[:300]
    return str(answer.get("error", response.text[:300]) if isinstance(answer, dict) else answer)[:300]
