"""A scripted model behind a real OpenAI-compatible HTTP server on 127.0.0.1: the tests' only double.

The server speaks `POST /v1/chat/completions` like vLLM or SGLang. Which reply it sends is decided by a
script: step N answers the request that already holds N assistant messages, so the server is stateless
(a retried request gets the same answer) and a replayed episode gets the same replies. A step may look
at the conversation (for instance, check that the compiler error reached it) before it answers.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cuda_agent.agent.llm import PREFLIGHT_HEADER

Request = dict[str, Any]

# A task small enough to lay out and run anywhere: what the solve CLI tests hand the agent.
RELU_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8)]


def get_init_inputs():
    return []
'''


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: bool = True  # False: send no usage block, like some servers
    reasoning: str | None = None
    status: int = 200  # not 200: an error response with `error` as its message
    error: str = ""


def call(name: str, call_id: str | None = None, raw_arguments: str | None = None, **arguments: Any) -> dict:
    """A tool call as a model sends it (arguments JSON-encoded unless given raw)."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": raw_arguments if raw_arguments is not None else json.dumps(arguments)},
    }


def assistant_turns(request: Request) -> int:
    return sum(1 for m in request["messages"] if m["role"] == "assistant")


def last_tool_results(request: Request) -> list[str]:
    """Contents of the tool messages after the last assistant message."""
    out: list[str] = []
    for message in reversed(request["messages"]):
        if message["role"] == "assistant":
            break
        if message["role"] == "tool":
            out.append(message["content"])
    return list(reversed(out))


class ScriptedLLM:
    """Context manager running the server; `url` is its base URL, `requests` what it received."""

    def __init__(
        self,
        script: Callable[[Request], Reply] | list[Callable[[Request], Reply]],
        port: int = 0,
        models: list[str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        if isinstance(script, list):
            steps = script
            self.script = lambda request: steps[min(assistant_turns(request), len(steps) - 1)](request)
        else:
            self.script = script
        self.port = port  # 0: any free port
        self.requests: list[Request] = []  # the agent's turns
        self.preflights: list[Request] = []  # `check_server`'s one-token requests, kept apart
        self.models = models  # None: no models endpoint (404), like some servers
        self.delay_s = delay_s  # seconds each agent turn takes to answer, like a long generation
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedLLM:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models") and owner.models is not None:
                    data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in owner.models]
                    self._send(200, {"object": "list", "data": data})
                    return
                self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.headers.get(PREFLIGHT_HEADER):
                    owner.preflights.append(body)
                else:
                    owner.requests.append(body)
                    if owner.delay_s:
                        time.sleep(owner.delay_s)
                try:
                    reply = owner.script(body)
                except Exception as e:  # a broken script shows up as a server error, not a hang
                    reply = Reply(status=500, error=f"script failed: {type(e).__name__}: {e}")
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": reply.error, "type": "invalid_request_error"}})
                    return
                self._send(200, owner.completion(body, reply))

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def completion(self, request: Request, reply: Reply) -> dict[str, Any]:
        turn = assistant_turns(request)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {**c, "id": c["id"] if c["id"] is not None else f"call_s{turn}_{i}"} for i, c in enumerate(reply.tool_calls)
            ]
            if any(c["id"] == "" for c in reply.tool_calls):  # let a test send empty ids on purpose
                message["tool_calls"] = [{**c, "id": ""} if c["id"] == "" else c for c in message["tool_calls"]]
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": 0,
            "model": request["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if reply.usage:
            prompt = len(json.dumps(request["messages"])) // 4
            completion = len(json.dumps(message)) // 4
            payload["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        return payload
