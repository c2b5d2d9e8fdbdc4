"""`CudaAgentLoop`: one CUDA Agent episode as a verl agent loop (agent name "cuda_agent"), for stage 4.

verl builds one of these per dataset row (`agent_name` column = "cuda_agent") and awaits `run`. The
episode is the one `cuda-agent solve` runs, with verl's tokens instead of an OpenAI server:
1. lay out the row's task in a fresh workspace with its judge cache and Bash sandbox
   (`agent.episode.open_workspace`: the same ten tools over the same layout; one tool layer);
2. the opening messages are solve's (`agent.prompts`: SKILL.md plus this environment, then the task),
   rendered with the tools by the model's chat template through verl's Continuous Token builder;
3. each turn: token ids in, token ids out through verl's server manager (`generate`); the model's tokens
   enter the response with mask 1; verl's tool parser for the model family (`rollout.multi_turn.format`,
   or `tool_parser` here) finds the calls; our ToolBox runs them (in a thread: they are processes);
   the results are appended as `tool` messages whose tokens get mask 0. Tool output is bounded by our
   own `max_output_chars` (30,000 by default), not verl's 256-character `max_tool_response_length`:
   compiler errors need room;
4. the episode ends as the agent's own does (no tool call: finished; the submit marker: submitted) or at
   a budget: `max_turns`, the context (`context_tokens`, 131,072 by default: prompt plus response, and
   never more than verl's `rollout.response_length` of response), the wall clock; a reply cut at its
   token limit without a tool call is asked to go on (`max_length_continuations` times);
5. the final workspace is judged (judging.py: this node's JudgeService or a judge server, bounded in
   time) and `reward_score` is the milestone reward; verdict status, speedups and the episode's exit go
   into `extra_fields` (`reward_extra_info` for verl's metrics, `cuda_agent` for the record).
A sample without a verdict (the judge down, slow or raising; `run()` itself raising, at any point) is
still returned, never raised: `failure_reward` stands in the reward slot verl needs, every token of its
response mask is 0 so no loss reads it (train/unjudged.py), and its status and reason are recorded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from pathlib import Path
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
from verl.experimental.agent_loop.tool_parser import ToolParser

from cuda_agent.agent.config import AgentConfig
from cuda_agent.agent.judging import JudgeOutcome
from cuda_agent.agent.prompts import system_prompt, task_prompt
from cuda_agent.agent.tools import ToolBox
from cuda_agent.task import Task
from cuda_agent.train.unjudged import ROLLOUT_ERROR
from cuda_agent.train.verl import AGENT_NAME
from cuda_agent.train.verl.data import task_from_extra_info
from cuda_agent.train.verl.judging import JudgeSettings, judge_bounded, judge_for, score_outcome
from cuda_agent.train.verl.scratch import remove_tree

log = logging.getLogger("cuda_agent.train.verl")

DEFAULT_WORKDIR = "/tmp/cuda-agent-rollouts"


@dataclasses.dataclass
class Episode:
    """What one rollout has built so far: messages for the template, token ids and their masks."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    token_ids: list[int]
    prompt_length: int
    response_mask: list[int] = dataclasses.field(default_factory=list)
    logprobs: list[float] = dataclasses.field(default_factory=list)
    assistant_turns: int = 0
    tool_turns: int = 0
    tool_calls: int = 0
    tool_statuses: dict[str, int] = dataclasses.field(default_factory=dict)
    continuations: int = 0
    exit: str = ""
    exit_message: str = ""

    @property
    def response_length(self) -> int:
        return len(self.response_mask)


@register(AGENT_NAME)
class CudaAgentLoop(AgentLoopBase):
    """Settings come from the agent-loop YAML entry (configs/agent_loop.yaml) as keyword arguments."""

    def __init__(self, *args: Any, judge_url: str | None = None, judge_timeout_s: float = 1800.0,
                 judge_retries: int = 3, failure_reward: float = 0.0, max_turns: int = 150,
                 context_tokens: int = 131_072, max_tokens_per_turn: int = 8192, min_completion_tokens: int = 512,
                 max_output_chars: int = 30_000, bash_timeout_s: float = 120.0, bash_max_timeout_s: float = 600.0,
                 time_limit_s: float | None = 7200.0, isolation: str = "auto", cache_seed_dir: str | None = None,
                 workdir: str | None = None, keep_workspaces: bool = False, tool_parser: str | None = None,
                 max_length_continuations: int = 3, **kwargs: Any) -> None:  # fmt: skip
        kwargs.pop("tools", None)  # verl's own tool list (rollout.multi_turn.tool_config_path): we run ours
        kwargs.pop("name", None)  # the YAML entry's agent name, passed along by hydra.utils.instantiate
        super().__init__(*args, **kwargs)
        base = AgentConfig()
        self.agent_config = dataclasses.replace(
            base, max_turns=int(max_turns), context_tokens=int(context_tokens), time_limit_s=time_limit_s,
            min_completion_tokens=int(min_completion_tokens), max_output_chars=int(max_output_chars),
            bash_timeout_s=float(bash_timeout_s), bash_max_timeout_s=float(bash_max_timeout_s),
            max_length_continuations=int(max_length_continuations), cache_seed_dir=cache_seed_dir,
            model=dataclasses.replace(base.model, max_tokens=int(max_tokens_per_turn)),
            sandbox=dataclasses.replace(base.sandbox, isolation=isolation),
        )  # fmt: skip
        self.judge_settings = JudgeSettings(url=judge_url or None, timeout_s=float(judge_timeout_s),
                                            retries=int(judge_retries), failure_reward=float(failure_reward))  # fmt: skip
        self.workdir = Path(workdir or DEFAULT_WORKDIR)
        self.keep_workspaces = str(keep_workspaces).strip().lower() in ("1", "true", "yes")
        parser_name = tool_parser or self.rollout_config.multi_turn.format
        self.tool_parser = ToolParser.get_tool_parser(parser_name, self.tokenizer)
        self.response_limit = int(self.rollout_config.response_length)

    # -- the story ----------------------------------------------------------------------------------

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        started = time.monotonic()
        metrics: dict[str, Any] = {"generate_sequences": 0.0, "tool_calls": 0.0}
        self._episode: Episode | None = None
        self._folder: Path | None = None
        try:
            return await self._run(sampling_params, kwargs, started, metrics)
        except Exception as exc:  # one broken episode is one masked sample, never the end of the step
            log.exception("the episode of %s raised; its sample is masked out of the loss", _row_name(kwargs))
            return await self._failed(exc, kwargs, metrics, time.monotonic() - started)

    async def _run(self, sampling_params: dict[str, Any], kwargs: dict[str, Any], started: float,
                   metrics: dict[str, Any]) -> AgentLoopOutput:  # fmt: skip
        task = task_from_extra_info(kwargs.get("extra_info"))
        folder = self._folder = self.workdir / f"{task.name}-{uuid.uuid4().hex[:12]}"
        toolbox = await asyncio.get_running_loop().run_in_executor(None, self._open, task, folder / "workspace")
        try:
            episode = self._episode = await self._start(task, toolbox)
            await self._converse(episode, toolbox, sampling_params, started, metrics)
        finally:
            toolbox.close()
        judge_start = time.monotonic()
        outcome = await judge_bounded(judge_for(self.judge_settings), toolbox.context.workspace.root, task,
                                      self.judge_settings.timeout_s,
                                      shared_gpus=self.judge_settings.url is None)  # fmt: skip
        metrics["compute_score"] = time.monotonic() - judge_start
        score = score_outcome(outcome, self.judge_settings.failure_reward, where=f"task {task.name}")
        await self._clean(folder)
        return self._output(episode, score, outcome.verdict, metrics, time.monotonic() - started, folder)

    async def _failed(self, exc: Exception, kwargs: dict[str, Any], metrics: dict[str, Any],
                      wall_s: float) -> AgentLoopOutput:  # fmt: skip
        """The sample of an episode that raised: what it had generated (or the row's prompt alone),
        every token masked, `rollout_error` with the exception as its reason."""
        reason = f"the agent loop raised {type(exc).__name__}: {exc}"
        score = score_outcome(JudgeOutcome(ROLLOUT_ERROR, None, reason), self.judge_settings.failure_reward,
                              where=_row_name(kwargs))  # fmt: skip
        episode = self._episode or await self._bare_episode(kwargs)
        if not episode.response_length:  # verl places the reward on the last response token: give it one
            episode.token_ids.append(_filler_token(self.tokenizer))
            episode.response_mask.append(0)
            if episode.logprobs:
                episode.logprobs.append(0.0)
        episode.exit, episode.exit_message = "error", reason
        if self._folder is not None:
            await self._clean(self._folder)
        return self._output(episode, score, None, metrics, wall_s, self._folder or self.workdir / "unstarted")

    async def _bare_episode(self, kwargs: dict[str, Any]) -> Episode:
        """An episode of the row's own prompt messages and nothing else, for a loop that failed before
        it had a prompt of its own."""
        messages = [dict(m) for m in (kwargs.get("raw_prompt") or [])]
        try:
            prompt_ids = list(await self.ct_build_initial_tokens(messages)) if messages else []
        except Exception:  # a prompt the template cannot render: the sample is masked either way
            prompt_ids = []
        prompt_ids = prompt_ids or [_filler_token(self.tokenizer)]
        return Episode(messages=messages, tools=[], token_ids=prompt_ids, prompt_length=len(prompt_ids))

    async def _clean(self, folder: Path) -> None:
        if not self.keep_workspaces:
            await asyncio.get_running_loop().run_in_executor(None, remove_tree, folder)

    def _open(self, task: Task, workspace: Path) -> ToolBox:
        from cuda_agent.agent.episode import open_workspace

        workspace.parent.mkdir(parents=True, exist_ok=True)
        return open_workspace(task, workspace, self.agent_config)

    async def _start(self, task: Task, toolbox: ToolBox) -> Episode:
        sandbox = toolbox.context.sandbox
        display = sandbox.workspace.display_root
        messages = [
            {"role": "system", "content": system_prompt(sandbox.workspace.root, display, self.agent_config,
                                                        sandbox.protections)},
            {"role": "user", "content": task_prompt(task.name, task.source, display)},
        ]  # fmt: skip
        tools = toolbox.schemas()
        prompt_ids = await self.ct_build_initial_tokens(messages, tools=tools)
        return Episode(messages=messages, tools=tools, token_ids=list(prompt_ids), prompt_length=len(prompt_ids))

    async def _converse(self, episode: Episode, toolbox: ToolBox, sampling_params: dict[str, Any],
                        started: float, metrics: dict[str, Any]) -> None:  # fmt: skip
        request_id = uuid.uuid4().hex  # one id per episode: the server manager keeps its turns on one server
        budget = min(self.response_limit, self.agent_config.context_tokens - episode.prompt_length)
        while True:
            stop = self._limit(episode, budget, started)
            if stop:
                episode.exit, episode.exit_message = stop
                return
            max_tokens = min(self.agent_config.model.max_tokens, budget - episode.response_length)
            generated = time.monotonic()
            output = await self.server_manager.generate(
                request_id=request_id, prompt_ids=episode.token_ids,
                sampling_params=self._sampling(sampling_params, max_tokens),
            )  # fmt: skip
            metrics["generate_sequences"] += time.monotonic() - generated
            token_ids = list(output.token_ids)[:max_tokens]
            await self._append_assistant(episode, token_ids, output.log_probs)
            content, calls = await self.tool_parser.extract_tool_calls(token_ids, self._parser_tools(episode))
            message = _assistant_message(content, calls, episode.assistant_turns)
            episode.messages.append(message)
            if calls:
                ran = time.monotonic()
                results = await self._run_tools(toolbox, message["tool_calls"], episode)
                metrics["tool_calls"] += time.monotonic() - ran
                if not await self._append_context(episode, results, budget):
                    episode.exit, episode.exit_message = "context_limit", "the tool results do not fit the context"
                    return
            submit = self.agent_config.submit_marker
            if submit and submit in (content or ""):
                episode.exit, episode.exit_message = "submitted", f"the model declared completion ({submit})"
                return
            if output.stop_reason == "aborted":
                episode.exit, episode.exit_message = "aborted", "the rollout server aborted the request"
                return
            if calls:
                episode.continuations = 0
                continue
            if len(token_ids) >= max_tokens and episode.continuations < self.agent_config.max_length_continuations:
                episode.continuations += 1
                note = {"role": "user", "content": f"Your response was cut off at the {max_tokens}-token response "
                        "limit before any tool call. Continue, more briefly: call a tool or give your final answer."}
                if not await self._append_context(episode, [note], budget):
                    episode.exit, episode.exit_message = "context_limit", "no room left to continue the response"
                    return
                continue
            if len(token_ids) >= max_tokens:
                episode.exit, episode.exit_message = "length_limit", "responses kept being cut at max_tokens"
            else:
                episode.exit, episode.exit_message = "finished", "the model replied without calling a tool"
            return

    # -- pieces -------------------------------------------------------------------------------------

    def _limit(self, episode: Episode, budget: int, started: float) -> tuple[str, str] | None:
        config = self.agent_config
        if episode.assistant_turns >= config.max_turns:
            return "turn_limit", f"reached the limit of {config.max_turns} turns"
        if config.time_limit_s is not None and time.monotonic() - started >= config.time_limit_s:
            return "time_limit", f"used the wall-clock budget of {config.time_limit_s:g} s"
        room = budget - episode.response_length
        if room < min(config.min_completion_tokens, budget):
            return "context_limit", (f"{episode.prompt_length + episode.response_length} tokens in context; no room "
                                     "is left for another response")  # fmt: skip
        return None

    def _sampling(self, sampling_params: dict[str, Any], max_tokens: int) -> dict[str, Any]:
        params = {**sampling_params, "max_tokens": int(max_tokens)}
        stops = self.tool_parser.stop_token_ids
        if stops:
            params["stop_token_ids"] = sorted(set(params.get("stop_token_ids") or []) | set(stops))
        return params

    def _parser_tools(self, episode: Episode) -> list[Any] | None:
        from verl.tools.schemas import OpenAIFunctionToolSchema

        try:
            return [OpenAIFunctionToolSchema.model_validate(schema) for schema in episode.tools]
        except ValueError:  # a schema verl's model cannot express: parsers that need none still work
            return None

    async def _append_assistant(self, episode: Episode, token_ids: list[int], logprobs: list[float] | None) -> None:
        keep_logprobs = bool(episode.logprobs or logprobs)
        merged, mask, aligned = await self.ct_merge_assistant_token(
            episode.token_ids, token_ids, episode.response_mask,
            episode.logprobs if keep_logprobs else None,
            assistant_logprobs=(list(logprobs) if logprobs else [0.0] * len(token_ids))[: len(token_ids)]
            if keep_logprobs else None,
        )  # fmt: skip
        episode.token_ids, episode.response_mask = merged.token_ids, mask
        if aligned is not None:
            episode.logprobs = aligned
        episode.assistant_turns += 1

    async def _append_context(self, episode: Episode, messages: list[dict[str, Any]], budget: int) -> bool:
        """Append tool results (or a note) with mask 0; False if they do not fit the response budget."""
        previous = list(episode.messages)
        episode.messages.extend(messages)
        merged, mask, aligned = await self.ct_merge_context_msg(
            previous, episode.messages, episode.token_ids, episode.response_mask,
            episode.logprobs if episode.logprobs else None, tools=episode.tools,
        )  # fmt: skip
        if len(mask) > budget:
            return False
        episode.token_ids, episode.response_mask = merged.token_ids, mask
        if episode.logprobs and aligned is not None:
            episode.logprobs = aligned
        episode.tool_turns += 1
        return True

    async def _run_tools(self, toolbox: ToolBox, calls: list[dict[str, Any]], episode: Episode
                         ) -> list[dict[str, Any]]:  # fmt: skip
        loop = asyncio.get_running_loop()
        results = []
        for call in calls:  # in order, one at a time: they share the workspace, as in solve
            function = call["function"]
            result = await loop.run_in_executor(None, toolbox.execute, function["name"], function["arguments"])
            episode.tool_calls += 1
            episode.tool_statuses[result.status] = episode.tool_statuses.get(result.status, 0) + 1
            results.append({"role": "tool", "tool_call_id": call["id"], "name": function["name"],
                            "content": result.content})  # fmt: skip
        return results

    def _logprobs(self, episode: Episode) -> list[float] | None:
        """The episode's log-probabilities; zeros for a failed one where the rollout asks for them (verl
        stacks them across the batch: one sample without them would break the batch)."""
        if episode.logprobs:
            return list(episode.logprobs)
        if episode.exit == "error" and getattr(self.rollout_config, "calculate_log_probs", False):
            return [0.0] * episode.response_length
        return None

    def _output(self, episode: Episode, score: Any, verdict: dict[str, Any] | None, metrics: dict[str, Any],
                wall_s: float, folder: Path) -> AgentLoopOutput:  # fmt: skip
        response_ids = episode.token_ids[episode.prompt_length:]
        record = {
            "exit": episode.exit, "exit_message": episode.exit_message,
            "assistant_turns": episode.assistant_turns, "tool_calls": episode.tool_calls,
            "tool_statuses": dict(episode.tool_statuses), "wall_s": round(wall_s, 3),
            "workspace": str(folder / "workspace") if self.keep_workspaces else None,
            **score.info,
            "verdict_stages": (verdict or {}).get("stages"),
        }  # fmt: skip
        info = {**score.info, "exit": episode.exit, "assistant_turns": episode.assistant_turns,
                "tool_calls": episode.tool_calls}  # fmt: skip
        # no verdict, no reward: every token is masked out of the loss (train/unjudged.py says why)
        mask = episode.response_mask if score.info["judged"] else [0] * episode.response_length
        return AgentLoopOutput(
            prompt_ids=episode.token_ids[: episode.prompt_length],
            response_ids=response_ids,
            response_mask=mask,
            response_logprobs=self._logprobs(episode),
            reward_score=score.value,
            # verl counts user, assistant and tool turns: the task message, each reply, each batch of results
            num_turns=1 + episode.assistant_turns + episode.tool_turns,
            metrics=metrics,
            extra_fields={"reward_extra_info": info, "cuda_agent": record},
        )


def _row_name(kwargs: dict[str, Any]) -> str:
    """The row's task name for a log line, whatever shape its extra_info has."""
    extra = kwargs.get("extra_info")
    task = extra.get("task") if isinstance(extra, dict) else None
    return f"task {task.get('name')}" if isinstance(task, dict) and task.get("name") else "a row without a task"


def _filler_token(tokenizer: Any) -> int:
    """A token to stand where a failed sample has none (always masked): end of sequence, else padding."""
    for token in (tokenizer.eos_token_id, tokenizer.pad_token_id):
        if isinstance(token, int):
            return token
    return 0


def _assistant_message(content: str, calls: list[Any], turn: int) -> dict[str, Any]:
    """The assistant turn as an OpenAI message; parsed calls get the stable ids solve's loop gives them."""
    message: dict[str, Any] = {"role": "assistant", "content": content or ""}
    if calls:
        message["tool_calls"] = [
            {"id": call.tool_call_id or f"call_{turn}_{index}", "type": "function",
             "function": {"name": call.name, "arguments": call.arguments}}
            for index, call in enumerate(calls)
        ]  # fmt: skip
    return message
