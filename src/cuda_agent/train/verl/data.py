"""Tasks -> verl's RL parquet: one row per task, for stage 1 (single turn) or stage 4 (the agent loop).

verl left-truncates (or drops, with `data.filter_overlong_prompts`) a prompt longer than its
`data.max_prompt_length`, and counts only the messages: the ten tool schemas CudaAgentLoop renders with
them (about 2,000 tokens) are not counted. Given a tokenizer and a limit (`PromptLimit`), every row's
prompt is counted here as the loop renders it (chat template, tools included, generation prompt), the
longest is reported, and a row over the limit is skipped with its count, or the conversion refused.

Tasks are read with the loaders `cuda-agent solve` uses: an Ops-6K parquet or `cuda-agent synth` output
(`load_ops6k`, keeping each row's `data_source` and ops), task files and folders (`collect_tasks`), and a
KernelBench checkout (`KernelBench/KernelBench`, whose level1/ ... level4/ folders hold the tasks). Every
task is validated statically (`load_task`); one that fails is reported and skipped, never written.

A row has verl's columns:
  prompt        the chat messages: for stage 1 the single-turn prompt (part 1's `single_turn_messages`);
                for stage 4 the opening messages `solve` sends, rendered for a bubblewrap workspace at
                /workspace (CudaAgentLoop renders them again for the workspace it lays out, so verl uses
                this copy only to filter over-long prompts and to log)
  agent_name    "cuda_agent_single_turn" (CudaSingleTurnLoop: verl's single-turn loop, judged in the
                loop, stage 1) or "cuda_agent" (CudaAgentLoop, stage 4)
  data_source   "cuda_agent/<origin>" (ops6k, synth, kernelbench/levelN, tasks): verl groups metrics by it
  ability       "cuda"
  reward_model  {"style": "judge", "ground_truth": <the task's digest>}: the judge needs no answer key
  extra_info    {"index", "split", "task": {"name", "source", "digest"}, "ops"}: what the loop and the
                reward function rebuild the task from
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_agent.task import Task, TaskError, load_task

SINGLE_TURN = "single_turn"
AGENT = "agent"
FORMATS = (SINGLE_TURN, AGENT)
SINGLE_TURN_AGENT = "cuda_agent_single_turn"  # verl's single-turn loop, judged in the loop (masks failures)
DISPLAY_ROOT = "/workspace"


OVERLONG = ("filter", "refuse")


@dataclass(frozen=True)
class PromptLimit:
    """Count every row's prompt with `tokenizer` (a model folder or hub id, as the recipe's MODEL/ACTOR)
    and keep it under `max_tokens` (the recipe's PROMPT_LEN: verl's `data.max_prompt_length`)."""

    tokenizer: str
    max_tokens: int = 8192
    overlong: str = "filter"  # filter: skip the row with its count; refuse: write nothing

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"the prompt token limit must be at least 1, got {self.max_tokens}")
        if self.overlong not in OVERLONG:
            raise ValueError(f"overlong must be one of {', '.join(OVERLONG)}, got {self.overlong!r}")


@dataclass
class Conversion:
    """What was read, written and skipped (with why), for the command's table and JSON."""

    read: int = 0
    written: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    sources: Counter = field(default_factory=Counter)
    paths: dict[str, str] = field(default_factory=dict)
    prompt_tokens: dict[str, Any] = field(default_factory=dict)  # counted: longest, limit, over

    def to_dict(self) -> dict[str, Any]:
        return {"read": self.read, "written": self.written, "skipped": [{"where": w, "why": y} for w, y in self.skipped],
                "data_sources": dict(self.sources), "paths": self.paths,
                "prompt_tokens": self.prompt_tokens}  # fmt: skip


def task_from_extra_info(extra_info: Any) -> Task:
    """The task a row carries (`extra_info.task`), validated again: rows come from files anyone can edit."""
    spec = (extra_info or {}).get("task") if isinstance(extra_info, dict) else None
    if not isinstance(spec, dict) or not isinstance(spec.get("source"), str):
        raise TaskError("the row's extra_info has no task (write the data with `cuda-agent train verl-data`)")
    name = str(spec.get("name") or "task")
    task = load_task(spec["source"], name=name)
    digest = spec.get("digest")
    if digest and digest != task.digest:
        raise TaskError(f"task {name}: its source does not match the digest recorded with it")
    return task


def load_tasks(specs: Iterable[str | Path], problems: list[tuple[str, str]]) -> list[tuple[Task, str]]:
    """(task, origin) for every task under `specs`; tasks that fail to load go to `problems` instead."""
    from cuda_agent.tasks import collect_tasks

    out: list[tuple[Task, str]] = []
    for spec in specs:
        path = Path(spec)
        if not path.exists():
            problems.append((str(path), "no such file or folder"))
            continue
        if path.suffix == ".parquet":
            out += _parquet_tasks(path, problems)
        elif path.is_dir() and _levels(path):
            for level in _levels(path):
                out += [(t, f"kernelbench/{level.name}") for t in collect_tasks([str(level)], problems)]
        else:
            out += [(t, "tasks") for t in collect_tasks([str(path)], problems)]
    return _unique(out)


def _levels(path: Path) -> list[Path]:
    """A KernelBench checkout's level folders (level1/, level2/, ...), if `path` is one."""
    return sorted(p for p in path.iterdir() if p.is_dir() and p.name.startswith("level") and any(p.glob("*.py")))


def _parquet_tasks(path: Path, problems: list[tuple[str, str]]) -> list[tuple[Task, str]]:
    import pyarrow.parquet as pq

    columns = pq.read_schema(path).names
    if "code" not in columns:  # not Ops-6K-shaped: the generic reader solve uses (source/name columns)
        from cuda_agent.tasks import collect_tasks

        return [(t, "tasks") for t in collect_tasks([str(path)], problems)]
    from cuda_agent.synth.dataset import load_ops6k

    origin = "synth" if "filter_log" in columns else "ops6k"
    out = []
    for raw in load_ops6k(path):
        try:
            task = load_task(raw.source, name=_safe(raw.name))
        except TaskError as exc:
            problems.append((f"{path} row {raw.metadata.get('row')}", str(exc)))
            continue
        out.append((Task(task.name, task.source, None, dict(raw.metadata)), origin))
    return out


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip(".") or "task"


def _unique(tasks: list[tuple[Task, str]]) -> list[tuple[Task, str]]:
    seen: Counter = Counter()
    out = []
    for task, origin in tasks:
        seen[task.name] += 1
        if seen[task.name] > 1:
            task = Task(f"{task.name}-{seen[task.name]}", task.source, task.path, task.metadata)
        out.append((task, origin))
    return out


def prompt_for(task: Task, fmt: str) -> list[dict[str, str]]:
    """The row's `prompt` messages for stage 1 (`single_turn`) or stage 4 (`agent`)."""
    if fmt == SINGLE_TURN:
        from cuda_agent.train.single_turn import single_turn_messages

        return single_turn_messages(task)
    if fmt == AGENT:
        from cuda_agent.agent.config import AgentConfig
        from cuda_agent.agent.prompts import system_prompt, task_prompt
        from cuda_agent.workspace.files import TEMPLATE_DIR

        protections = {"mechanism": "bwrap", "network": "isolated"}
        return [{"role": "system", "content": system_prompt(TEMPLATE_DIR, DISPLAY_ROOT, AgentConfig(), protections)},
                {"role": "user", "content": task_prompt(task.name, task.source, DISPLAY_ROOT)}]  # fmt: skip
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")


def prompt_tools(fmt: str) -> list[dict[str, Any]] | None:
    """The tool schemas the loop renders with a row's prompt: stage 4's ten tools, none for stage 1. Bash's
    description names the episode's sandbox; the longest of its sentences is counted."""
    if fmt != AGENT:
        return None
    from cuda_agent.agent.tools import default_tools
    from cuda_agent.agent.tools.bash import Bash
    from cuda_agent.agent.tools.sandbox import Sandbox, SandboxPolicy

    sentences = [Sandbox(None, mechanism, SandboxPolicy(allow_network=network), {}).describe()  # type: ignore[arg-type]
                 for mechanism in ("bwrap", "unshare", "none") for network in (False, True)]  # fmt: skip
    schemas = []
    for tool in default_tools():
        schema = tool.schema()
        if isinstance(tool, Bash):
            schema["function"]["description"] = tool.description.format(sandbox=max(sentences, key=len))
        schemas.append(schema)
    return schemas


def prompt_tokens(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    """Tokens of the prompt as the agent loop sends it: chat template, tool schemas, generation prompt."""
    ids = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=True,
                                        return_dict=True)["input_ids"]  # fmt: skip
    return len(ids)


def within_limit(tasks: list[tuple[Task, str]], fmt: str, limit: PromptLimit, report: Conversion) -> list[tuple[Task, str]]:
    """The tasks whose prompt fits `limit`; the others go to `report.skipped` with their count (filter) or
    raise a ValueError listing them (refuse). `report.prompt_tokens` gets the figures either way."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(limit.tokenizer)
    tools = prompt_tools(fmt)
    counts = [(task, origin, prompt_tokens(tokenizer, prompt_for(task, fmt), tools)) for task, origin in tasks]
    over = [(task.name, n) for task, _, n in counts if n > limit.max_tokens]
    longest = max(counts, key=lambda c: c[2], default=None)
    report.prompt_tokens = {"tokenizer": limit.tokenizer, "limit": limit.max_tokens, "tools_counted": bool(tools),
                            "longest": longest[2] if longest else 0, "longest_task": longest[0].name if longest else None,
                            "over": len(over)}  # fmt: skip
    if over and limit.overlong == "refuse":
        shown = ", ".join(f"{name} ({n})" for name, n in over[:10]) + (" ..." if len(over) > 10 else "")
        raise ValueError(f"{len(over)} task prompt(s) exceed {limit.max_tokens} tokens with the tool schemas: {shown}; "
                         "raise the limit (and the recipe's PROMPT_LEN) or pass --overlong filter")  # fmt: skip
    for name, n in over:
        report.skipped.append((name, f"prompt of {n} tokens (tool schemas included) exceeds the limit of "
                                     f"{limit.max_tokens}"))  # fmt: skip
    return [(task, origin) for task, origin, n in counts if n <= limit.max_tokens]


def row_for(task: Task, origin: str, fmt: str, index: int, split: str) -> dict[str, Any]:
    from cuda_agent.train.verl import AGENT_NAME

    ops = task.metadata.get("ops") or []
    return {
        "data_source": f"cuda_agent/{origin}",
        "agent_name": SINGLE_TURN_AGENT if fmt == SINGLE_TURN else AGENT_NAME,
        "prompt": prompt_for(task, fmt),
        "ability": "cuda",
        "reward_model": {"style": "judge", "ground_truth": task.digest},
        "extra_info": {"index": index, "split": split, "ops": [str(o) for o in ops],
                       "task": {"name": task.name, "source": task.source, "digest": task.digest}},
    }


def convert(specs: Iterable[str | Path], out: Path, *, fmt: str, val_size: int = 0, seed: int = 0,
            limit: PromptLimit | None = None) -> Conversion:  # fmt: skip
    """Write `out`/train.parquet (and val.parquet with `val_size` tasks held out at random); with `limit`,
    only rows whose prompt fits it."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    report = Conversion()
    tasks = load_tasks(specs, report.skipped)
    report.read = len(tasks) + len(report.skipped)
    if limit is not None and tasks:
        tasks = within_limit(tasks, fmt, limit, report)
    if not tasks:
        return report
    order = list(range(len(tasks)))
    random.Random(seed).shuffle(order)
    val_size = max(0, min(int(val_size), len(tasks) - 1))
    held = set(order[:val_size])
    splits = {"train": [i for i in range(len(tasks)) if i not in held], "val": sorted(held)}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for split, indices in splits.items():
        if not indices:
            continue
        rows = [row_for(tasks[i][0], tasks[i][1], fmt, n, split) for n, i in enumerate(indices)]
        path = out / f"{split}.parquet"
        write_rows(rows, path)
        report.written[split] = len(rows)
        report.paths[split] = str(path)
        report.sources.update(r["data_source"] for r in rows)
    return report


def write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """Parquet, written to a temporary name and renamed: a reader never sees half a file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(pa.Table.from_pylist(rows), tmp)
    tmp.replace(path)


def table(report: Conversion) -> str:
    lines = [f"read {report.read} task(s); wrote " + (", ".join(f"{n} {s}" for s, n in report.written.items())
                                                    or "nothing")]  # fmt: skip
    for source, count in sorted(report.sources.items()):
        lines.append(f"  {source:<32} {count:>6}")
    counted = report.prompt_tokens
    if counted:
        lines.append(f"prompt tokens ({'tool schemas included, ' if counted['tools_counted'] else ''}"
                     f"{counted['tokenizer']}): longest {counted['longest']} ({counted['longest_task']}), "
                     f"limit {counted['limit']}, {counted['over']} over")  # fmt: skip
    else:
        lines.append("prompt tokens: not counted (pass --tokenizer MODEL to count them against --max-prompt-tokens)")
    if report.skipped:
        lines.append(f"skipped {len(report.skipped)}:")
        lines += [f"  {where}: {why}" for where, why in report.skipped[:20]]
        if len(report.skipped) > 20:
            lines.append(f"  ... and {len(report.skipped) - 20} more (see --json)")
    return "\n".join(lines)


def dumps(report: Conversion) -> str:
    return json.dumps(report.to_dict())
