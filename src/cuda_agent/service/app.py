"""The judge server's HTTP API (FastAPI), version 1. Every route but health and readiness needs a bearer
token; a judgment is visible only to the token that submitted it.

  POST /v1/judgments               submit: JSON {"files": {...}, "task": "...", "task_name": "..."} or a
                                   tar archive (Content-Type application/x-tar or application/gzip);
                                   header Idempotency-Key (optional). 202 {"id", ...}; 200 when the key
                                   found an earlier judgment; 429 + Retry-After when the queue is full.
  POST /v1/batches                 {"submissions": [{..., "idempotency_key": "..."}]}: all or nothing.
  GET  /v1/judgments/{id}?wait=S   the judgment; with wait, a long poll of up to S seconds (<= 60) for
                                   its verdict.
  GET  /v1/judgments/{id}/events   server-sent events: `state` now, then `verdict` when reached.
  GET  /v1/health, /v1/ready       liveness; readiness (503 while starting or with a full queue).
  GET  /metrics                    Prometheus metrics (the queue's and the process's).
  GET  /openapi.json               the API's OpenAPI schema (behind auth, as everything but health).

Bodies are read through a byte limit before anything is parsed; contents and tokens are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from cuda_agent.service.auth import Tokens
from cuda_agent.service.jobs import JobQueue, QueueFull
from cuda_agent.service.store import KeyConflict
from cuda_agent.service.submission import Limits, Submission, SubmissionRejected, from_archive, from_json

log = logging.getLogger("cuda_agent.service")
API_VERSION = "v1"
MAX_WAIT_S = 60.0
ARCHIVE_TYPES = ("application/x-tar", "application/tar", "application/gzip", "application/x-gzip",
                 "application/x-xz", "application/x-bzip2", "application/octet-stream")  # fmt: skip


class Refused(Exception):
    def __init__(self, status: int, reason: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.headers = status, reason, headers or {}


def create_app(jobs: JobQueue, tokens: Tokens, limits: Limits | None = None) -> FastAPI:
    limits = limits or Limits()
    # The schema is served behind auth (below), not at FastAPI's open /openapi.json.
    app = FastAPI(title="cuda-agent judge", version=API_VERSION, docs_url=None, redoc_url=None, openapi_url=None)
    metrics = jobs.metrics

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> JSONResponse:
        return JSONResponse({"error": exc.reason}, status_code=exc.status, headers=exc.headers)

    def client_of(request: Request) -> str:
        client = tokens.client_of(request.headers.get("authorization"))
        if client is None:
            metrics.refused.labels("auth").inc()
            raise Refused(401, "missing or wrong bearer token (Authorization: Bearer TOKEN)",
                          {"WWW-Authenticate": "Bearer"})  # fmt: skip
        return client

    async def body_of(request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_request_bytes:
            metrics.refused.labels("too_large").inc()
            raise Refused(413, f"request body over {limits.max_request_bytes >> 20} MiB")

        async def read() -> bytes:
            chunks, size = [], 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > limits.max_request_bytes:
                    metrics.refused.labels("too_large").inc()
                    raise Refused(413, f"request body over {limits.max_request_bytes >> 20} MiB")
                chunks.append(chunk)
            return b"".join(chunks)

        try:
            return await asyncio.wait_for(read(), timeout=limits.body_timeout_s)
        except asyncio.TimeoutError as exc:  # a client trickling its body holds a connection, not the server
            metrics.refused.labels("slow_body").inc()
            raise Refused(408, f"the request body did not arrive within {limits.body_timeout_s:g} s",
                          {"Connection": "close"}) from exc  # fmt: skip

    async def json_of(request: Request) -> Any:
        body = await body_of(request)
        try:
            return json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise Refused(400, f"the body is not valid JSON: {exc}") from exc
        except RecursionError as exc:  # "[[[[...": nested deeper than the parser's stack
            raise Refused(400, "the body's JSON is nested too deeply") from exc

    def rejected(exc: SubmissionRejected) -> Refused:
        metrics.refused.labels("too_large" if exc.status == 413 else "bad_submission").inc()
        return Refused(exc.status, exc.reason)

    def key_of(value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or not 1 <= len(value) <= 200:
            raise Refused(400, "an idempotency key is a string of 1 to 200 characters")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate from JSON: valid JSON, no key SQLite can keep
            raise Refused(400, "an idempotency key must be valid Unicode text") from exc
        return value

    async def admit(client: str, items: list[tuple[Submission, str | None]]) -> list[tuple[str, bool]]:
        try:
            return await run_in_threadpool(jobs.submit_many, client, items)
        except QueueFull as exc:
            raise Refused(429, str(exc), {"Retry-After": str(exc.retry_after_s)}) from exc
        except KeyConflict as exc:
            raise Refused(409, str(exc)) from exc

    def accepted(judgment_id: str, created: bool, submission: Submission) -> dict[str, Any]:
        return {"id": judgment_id, "created": created, "ignored": list(submission.ignored),
                "url": f"/{API_VERSION}/judgments/{judgment_id}"}  # fmt: skip

    # ---- submitting ----------------------------------------------------------------------------
    @app.post(f"/{API_VERSION}/judgments")
    async def submit(request: Request) -> JSONResponse:
        client = client_of(request)
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        try:
            if kind == "application/json":
                submission = from_json(await json_of(request), limits)
            elif kind in ARCHIVE_TYPES:
                data = await body_of(request)
                name = request.query_params.get("task_name")
                submission = await run_in_threadpool(from_archive, data, limits, None, name)
            else:
                raise Refused(415, "send application/json or a tar archive (application/x-tar, application/gzip)")
        except SubmissionRejected as exc:
            raise rejected(exc) from exc
        key = key_of(request.headers.get("idempotency-key"))
        [(judgment_id, created)] = await admit(client, [(submission, key)])
        log.info("judgment %s %s (%d files)", judgment_id, "accepted" if created else "found by key",
                 len(submission.files))  # fmt: skip
        return JSONResponse(accepted(judgment_id, created, submission), status_code=202 if created else 200)

    @app.post(f"/{API_VERSION}/batches")
    async def submit_batch(request: Request) -> JSONResponse:
        client = client_of(request)
        body = await json_of(request)
        items = body.get("submissions") if isinstance(body, dict) else None
        if not isinstance(items, list) or not items:
            raise Refused(400, 'expected {"submissions": [{"files": {...}, "task": "..."}, ...]}')
        if len(items) > limits.max_batch:
            raise Refused(413, f"at most {limits.max_batch} submissions per batch")
        parsed: list[tuple[Submission, str | None]] = []
        for index, item in enumerate(items):
            try:
                parsed.append((from_json(item, limits), key_of(item.get("idempotency_key"))))
            except Refused as exc:
                raise Refused(exc.status, f"submissions[{index}]: {exc.reason}") from exc
            except SubmissionRejected as exc:
                raise rejected(SubmissionRejected(f"submissions[{index}]: {exc.reason}", exc.status)) from exc
        answers = await admit(client, parsed)
        log.info("batch of %d accepted", len(answers))
        return JSONResponse({"judgments": [accepted(i, c, s) for (i, c), (s, _) in zip(answers, parsed, strict=True)]},
                            status_code=202)  # fmt: skip

    # ---- reading and waiting ---------------------------------------------------------------------
    def record_of(judgment_id: str, client: str) -> dict[str, Any]:
        record = jobs.store.get(judgment_id, client)
        if record is None:
            raise Refused(404, f"no judgment {judgment_id} for this token")
        return record.to_dict()

    @app.get(f"/{API_VERSION}/judgments/{{judgment_id}}")
    async def get_judgment(judgment_id: str, request: Request, wait: float = 0.0) -> JSONResponse:
        client = client_of(request)
        record = await run_in_threadpool(record_of, judgment_id, client)
        if record["state"] != "done" and wait > 0:
            event = jobs.watch(judgment_id)
            try:
                record = await run_in_threadpool(record_of, judgment_id, client)  # done meanwhile?
                if record["state"] != "done":
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(event.wait(), timeout=min(wait, MAX_WAIT_S))
                    record = await run_in_threadpool(record_of, judgment_id, client)
            finally:
                jobs.unwatch(judgment_id, event)
        return JSONResponse(record)

    @app.get(f"/{API_VERSION}/judgments/{{judgment_id}}/events")
    async def events(judgment_id: str, request: Request) -> StreamingResponse:
        client = client_of(request)
        first = await run_in_threadpool(record_of, judgment_id, client)

        async def stream() -> Any:
            record = first
            yield _sse("state", {"id": judgment_id, "state": record["state"]})
            while record["state"] != "done":
                if jobs.closing:  # shutting down: end the stream (reconnect after the restart), no busy wait
                    return
                event = jobs.watch(judgment_id)
                try:
                    record = await run_in_threadpool(record_of, judgment_id, client)
                    if record["state"] == "done":
                        break
                    try:
                        await asyncio.wait_for(event.wait(), timeout=15)
                    except asyncio.TimeoutError:
                        yield ": keep-alive\n\n"
                    record = await run_in_threadpool(record_of, judgment_id, client)
                finally:
                    jobs.unwatch(judgment_id, event)
            yield _sse("verdict", record)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    # ---- operations --------------------------------------------------------------------------------
    @app.get(f"/{API_VERSION}/health")
    async def health() -> dict[str, Any]:
        return {"ok": True}

    @app.get(f"/{API_VERSION}/ready")
    async def ready() -> JSONResponse:
        full = jobs.pending >= jobs.max_pending
        ok = jobs.ready and not full
        body = {"ready": ok, "lanes": jobs.executor.lanes, "pending": jobs.pending, "max_pending": jobs.max_pending}
        if not jobs.ready:
            body["reason"] = "starting"
        elif full:
            body["reason"] = "queue full"
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_schema(request: Request) -> JSONResponse:
        client_of(request)
        return JSONResponse(app.openapi())

    @app.get("/metrics")
    async def prometheus(request: Request) -> Response:
        client_of(request)
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    return app


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, sort_keys=True, allow_nan=False)}\n\n"  # the store's records are strict JSON
