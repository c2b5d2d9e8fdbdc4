"""The ReAct loop: query the model, run the tools it calls, feed the results back, until it is done.

The story is `run -> step -> (check_limits, query, execute)`. Everything that ends an episode is an
`AgentExit` exception carrying its status and message: the model finished (no tool calls) or submitted
(the submit marker), a budget ran out (turns, context, tokens, wall clock), the model server failed, or
the run was cancelled. Anything that merely went wrong inside a turn (bad JSON, an unknown tool, wrong
arguments, a refused path, a failing command) goes back to the model as a tool result.

Token accounting uses the server's `usage` when it reports one, and an estimate (bytes / 3, which
over-counts code and English a little, the safe side) for what was added since, so the context budget
holds even against servers that report nothing.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from cuda_agent.agent.config import AgentConfig
from cuda_agent.agent.llm import ModelClient, ModelError, ModelResponse
from cuda_agent.agent.progress import ProgressTracker
from cuda_agent.agent.tools import ToolBox
from cuda_agent.agent.trajectory import TrajectoryWriter

MESSAGE_OVERHEAD_TOKENS = 4


# -- how episodes end ------------------------------------------------------------------------------


class AgentExit(Exception):
    """Ends the episode; `status` is recorded in the trajectory, the message explains it."""

    status = "exit"

    def __init__(self, message: str, status: str | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class Finished(AgentExit):
    status = "finished"  # the model answered without calling a tool


class Submitted(AgentExit):
    status = "submitted"  # the model declared completion with the submit marker


class LimitExceeded(AgentExit):
    status = "limit"  # instances say which: turn_limit, context_limit, token_limit, time_limit


class ModelFailure(AgentExit):
    status = "model_error"


class Cancelled(AgentExit):
    status = "cancelled"


@dataclass(frozen=True)
class ExitInfo:
    status: str
    message: str


class Observer(Protocol):
    """Receives live events ('turn', 'tool_start', 'tool_end', 'exit', ...) for progress displays."""

    def __call__(self, event: str, **data: Any) -> None: ...


def estimate_tokens(text: str) -> int:
    return (len(text.encode("utf-8")) + 2) // 3


def estimate_message_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(json.dumps(m, ensure_ascii=False)) + MESSAGE_OVERHEAD_TOKENS for m in messages)


# -- the loop ---------------------------------------------------------------------------------------


class Agent:
    """One episode's conversation with the model, recorded into `trajectory` as it happens."""

    def __init__(
        self,
        client: ModelClient,
        toolbox: ToolBox,
        config: AgentConfig,
        trajectory: TrajectoryWriter,
        *,
        observer: Observer | None = None,
        cancel: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.toolbox = toolbox
        self.config = config
        self.trajectory = trajectory
        self.observer = observer or (lambda event, **data: None)
        self.cancel = cancel or threading.Event()
        self.clock = clock
        self.wall_clock = wall_clock
        self.tools = toolbox.schemas()
        self.progress = ProgressTracker()
        self.messages: list[dict[str, Any]] = []
        self.turns: list[dict[str, Any]] = []
        self.turn = 0
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "unreported_turns": 0}
        self._anchor: tuple[int, int] | None = None  # (tokens the server counted, messages they covered)
        self._length_streak = 0
        self._started = clock()
        # Bash commands never outlive the episode's wall-clock budget, nor a cancelled run.
        toolbox.context.time_left = self.time_left
        toolbox.context.cancel = self.cancel
        trajectory.update(messages=self.messages, turns=self.turns, tools=self.tools, usage=self.usage)

    # -- the story ----------------------------------------------------------------------------------

    def run(self, system_prompt: str, task_prompt: str) -> ExitInfo:
        self._started = self.clock()
        self.add_message({"role": "system", "content": system_prompt})
        self.add_message({"role": "user", "content": task_prompt})
        while True:
            try:
                self.step()
            except AgentExit as exit_:
                info = ExitInfo(exit_.status, str(exit_))
                self.trajectory.update(exit={"status": info.status, "message": info.message})
                self.observer("exit", status=info.status, message=info.message, turns=self.turn)
                return info

    def step(self) -> None:
        self.check_limits()
        response = self.query()
        self.execute(response)

    def check_limits(self) -> None:
        if self.cancel.is_set():
            raise Cancelled("the run was cancelled")
        if self.turn >= self.config.max_turns:
            raise LimitExceeded(f"reached the limit of {self.config.max_turns} turns", "turn_limit")
        left = self.time_left()
        if left is not None and left <= 0:
            raise LimitExceeded(f"used the wall-clock budget of {self.config.time_limit_s:g} s", "time_limit")
        budget = self.config.max_total_tokens
        if budget is not None and self.usage["total_tokens"] >= budget:
            raise LimitExceeded(f"used {self.usage['total_tokens']} of the {budget}-token budget", "token_limit")
        if self.completion_room() < self.config.min_completion_tokens:
            raise LimitExceeded(
                f"the conversation holds about {self.context_tokens()} tokens of the {self.config.context_tokens}-"
                "token context; no room is left for another response",
                "context_limit",
            )

    def query(self) -> ModelResponse:
        self.turn += 1
        max_tokens = min(self.config.model.max_tokens, self.completion_room())
        self.observer("turn", turn=self.turn, max_turns=self.config.max_turns, context_tokens=self.context_tokens(),
                      best=self.progress.label())  # fmt: skip
        started_at, start = self.wall_clock(), self.clock()
        try:
            response = self.client.complete(self.messages, self.tools, max_tokens=max_tokens, timeout=self.time_left())
        except ModelError as e:
            if e.cancelled or self.cancel.is_set():
                raise Cancelled("the run was cancelled while the model was answering") from e
            if e.context_overflow:
                raise LimitExceeded(f"the model server says the context is full: {e}", "context_limit") from e
            raise ModelFailure(str(e)) from e
        message = self._with_stable_ids(response.message)
        self.add_message(message)
        self._account(response)
        record: dict[str, Any] = {
            "turn": self.turn,
            "finish_reason": response.finish_reason,
            "max_tokens": max_tokens,
            "usage": response.usage,
            "context_tokens": self.context_tokens(),
            "retries": response.retries,
            "tool_results": [],
            "timings": {"started_at": started_at, "model_s": round(self.clock() - start, 6)},
        }
        self.turns.append(record)
        self.trajectory.flush()
        return response

    def execute(self, response: ModelResponse) -> None:
        message = self.messages[-1]
        calls = message.get("tool_calls") or []
        record = self.turns[-1]
        start = self.clock()
        for call in calls:
            if self.cancel.is_set():
                result_text, status, meta = "Not run: the episode was cancelled.", "error", {}
            else:
                result_text, status, meta = self._run_tool(call)
            self.add_message({"role": "tool", "tool_call_id": call["id"], "content": result_text})
            record["tool_results"].append({"id": call["id"], "name": call["function"]["name"], "status": status,
                                           "meta": meta})  # fmt: skip
        record["timings"]["tools_s"] = round(self.clock() - start, 6)
        self.trajectory.update(progress=self.progress.snapshot())
        content = message.get("content") or ""
        if self.config.submit_marker and self.config.submit_marker in content:
            raise Submitted(f"the model declared completion ({self.config.submit_marker})")
        if calls:
            self._length_streak = 0
            return
        if response.finish_reason == "length":
            self._continue_after_cut(record)
            return
        raise Finished("the model replied without calling a tool")

    # -- pieces -------------------------------------------------------------------------------------

    def _run_tool(self, call: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        name = call["function"]["name"]
        arguments = call["function"]["arguments"]
        self.observer("tool_start", turn=self.turn, name=name, summary=self.toolbox.summary(name, arguments),
                      best=self.progress.label())  # fmt: skip
        result = self.toolbox.execute(name, arguments)
        if name == "Bash" and "exit_code" in result.meta:
            command = _command_of(arguments)
            if command is not None:
                self.progress.observe(self.turn, command, result.content, result.meta["exit_code"])
        self.observer("tool_end", turn=self.turn, name=name, status=result.status, best=self.progress.label())
        return result.content, result.status, dict(result.meta)

    def _continue_after_cut(self, record: dict[str, Any]) -> None:
        """A response cut by max_tokens is not a decision to stop: ask the model to go on, a few times."""
        self._length_streak += 1
        if self._length_streak > self.config.max_length_continuations:
            raise LimitExceeded(
                f"{self._length_streak} responses in a row were cut at max_tokens without a tool call", "length_limit"
            )
        record["continuation"] = True
        self.add_message({
            "role": "user",
            "content": f"Your response was cut off at the {record['max_tokens']}-token response limit before any "
            "tool call. Continue, more briefly: call a tool or give your final answer.",
        })  # fmt: skip

    def add_message(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.trajectory.flush()

    def _with_stable_ids(self, message: dict[str, Any]) -> dict[str, Any]:
        """Keep the server's tool-call ids; make up deterministic ones where it sent none or repeats."""
        calls = message.get("tool_calls")
        if not calls:
            return message
        seen: set[str] = set()
        fixed = []
        for index, call in enumerate(calls):
            call_id = call.get("id") or ""
            if not call_id or call_id in seen:
                call_id = f"call_{self.turn}_{index}"
            seen.add(call_id)
            fixed.append({**call, "id": call_id})
        return {**message, "tool_calls": fixed}

    def _account(self, response: ModelResponse) -> None:
        usage = response.usage
        if usage:
            for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
                self.usage[key] += int(usage.get(key, 0))
            self._anchor = (int(usage["prompt_tokens"]) + int(usage["completion_tokens"]), len(self.messages))
        else:
            prompt = self.context_tokens_before_last()
            completion = estimate_message_tokens(self.messages[-1:])
            self.usage["prompt_tokens"] += prompt
            self.usage["completion_tokens"] += completion
            self.usage["total_tokens"] += prompt + completion
            self.usage["unreported_turns"] += 1
        self.usage["context_tokens"] = self.context_tokens()

    def context_tokens(self) -> int:
        """Tokens the next request will hold: the server's last count plus an estimate of what came since."""
        if self._anchor is None:
            return estimate_message_tokens(self.messages) + estimate_tokens(json.dumps(self.tools))
        counted, covered = self._anchor
        return counted + estimate_message_tokens(self.messages[covered:])

    def context_tokens_before_last(self) -> int:
        if self._anchor is None:
            return estimate_message_tokens(self.messages[:-1]) + estimate_tokens(json.dumps(self.tools))
        counted, covered = self._anchor
        return counted + estimate_message_tokens(self.messages[covered:-1])

    def completion_room(self) -> int:
        return self.config.context_tokens - self.context_tokens()

    def time_left(self) -> float | None:
        if self.config.time_limit_s is None:
            return None
        return self.config.time_limit_s - (self.clock() - self._started)


def _command_of(arguments: Any) -> str | None:
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        return None
    command = args.get("command") if isinstance(args, dict) else None
    return command if isinstance(command, str) and not args.get("run_in_background") else None
