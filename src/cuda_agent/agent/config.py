"""Agent settings: the model endpoint, the episode's budgets and the Bash sandbox policy.

Values come, in increasing priority, from the defaults here, a config file (TOML or JSON, given with
`--config` or `CUDA_AGENT_CONFIG`), the environment (`CUDA_AGENT_*`, then the OpenAI SDK's own
`OPENAI_BASE_URL`/`OPENAI_API_KEY`) and explicit options. Unknown keys in a config file are errors, so a
typo cannot silently leave a budget at its default. The API key is never written into trajectories.

Config file layout (all sections and keys optional)::

    [model]
    name = "Qwen/Qwen3-32B"
    base_url = "http://localhost:8000/v1"
    api_key_env = "MY_PROVIDER_KEY"   # read the key from this variable
    temperature = 0.6
    max_tokens = 8192

    [agent]
    max_turns = 150
    context_tokens = 131072
    time_limit_s = 7200

    [sandbox]
    isolation = "auto"   # auto | bwrap | unshare | none
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_agent.agent.tools.sandbox import SandboxPolicy

DEFAULT_CONTEXT_TOKENS = 131_072


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names it."""


@dataclass(frozen=True)
class ModelConfig:
    """How to reach the model: any OpenAI-compatible chat-completions server."""

    name: str = ""
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float | None = None  # None: the server's default
    top_p: float | None = None
    max_tokens: int = 8192  # per response; shrunk to what the context budget still allows
    seed: int | None = None
    request_timeout_s: float = 600.0
    max_retries: int = 6
    retry_base_s: float = 1.0
    retry_max_s: float = 60.0
    parallel_tool_calls: bool | None = None  # None: do not send the flag (some servers reject it)
    send_reasoning: bool = False  # send reasoning_content of earlier turns back to the server
    extra_body: dict[str, Any] = field(default_factory=dict)  # e.g. {"top_k": 20} for vLLM

    def public(self) -> dict[str, Any]:
        """Everything but the API key, for trajectories and logs."""
        data = dataclasses.asdict(self)
        data.pop("api_key")
        return data


@dataclass(frozen=True)
class AgentConfig:
    """One episode's budgets and tool limits."""

    model: ModelConfig = field(default_factory=ModelConfig)
    max_turns: int = 150
    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    max_total_tokens: int | None = None  # prompt + completion tokens over the whole episode
    time_limit_s: float | None = 7200.0
    min_completion_tokens: int = 512  # stop when less than this is left in the context
    # An assistant message containing this string ends the episode after its tool calls ran.
    submit_marker: str = "TASK_COMPLETE"
    max_length_continuations: int = 3  # responses cut by max_tokens in a row before giving up
    bash_timeout_s: float = 120.0
    bash_max_timeout_s: float = 600.0
    max_output_chars: int = 30_000
    # A judge cache folder (objects/, baselines/; e.g. made by `cuda-agent cache warm --root DIR`) whose
    # objects and precompiled header each episode's builds read in place, read-only (never copied: an
    # episode adds only its own objects to disk); its small baselines/ are copied into the episode's
    # private cache. Without one, the machine's shared cache (~/.cache/cuda-agent/shared) is used if warmed.
    cache_seed_dir: str | None = None
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)

    def public(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["model"] = self.model.public()
        return data


_SECTIONS = {"model": ModelConfig, "agent": AgentConfig, "sandbox": SandboxPolicy}
_ENV = {
    "model": {
        "name": ("CUDA_AGENT_MODEL",),
        "base_url": ("CUDA_AGENT_BASE_URL", "OPENAI_BASE_URL"),
        "api_key": ("CUDA_AGENT_API_KEY", "OPENAI_API_KEY"),
        "temperature": ("CUDA_AGENT_TEMPERATURE",),
        "max_tokens": ("CUDA_AGENT_MAX_TOKENS",),
    },
    "agent": {
        "max_turns": ("CUDA_AGENT_MAX_TURNS",),
        "context_tokens": ("CUDA_AGENT_CONTEXT_TOKENS",),
        "time_limit_s": ("CUDA_AGENT_TIME_LIMIT_S",),
    },
    "sandbox": {"isolation": ("CUDA_AGENT_ISOLATION",)},
}


def read_config_file(path: Path | str) -> dict[str, dict[str, Any]]:
    """Parse a TOML (.toml) or JSON config file into {section: {key: value}}."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from e
    if path.suffix != ".json":
        try:
            import tomllib
        except ModuleNotFoundError as e:  # Python 3.10
            raise ConfigError(f"reading {path} needs Python 3.11 (tomllib); use a .json config file") from e
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except ValueError as e:
        raise ConfigError(f"config file {path} is not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {e}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a table of sections")
    unknown = sorted(set(data) - set(_SECTIONS))
    if unknown:
        raise ConfigError(f"config file {path}: unknown section(s) {', '.join(unknown)}; known: model, agent, sandbox")
    return {name: dict(section) for name, section in data.items()}


def load_config(
    path: Path | str | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    environ: Mapping[str, str] | None = None,
) -> AgentConfig:
    """Merge defaults < config file < environment < `overrides` ({section: {key: value}}, None = unset)."""
    environ = os.environ if environ is None else environ
    path = path or environ.get("CUDA_AGENT_CONFIG") or None
    layers: dict[str, dict[str, Any]] = {name: {} for name in _SECTIONS}
    if path:
        for name, values in read_config_file(path).items():
            layers[name].update(values)
    key_env = layers["model"].pop("api_key_env", None)
    for section, keys in _ENV.items():
        for key, names in keys.items():
            if key == "api_key" and key_env:
                names = (key_env, *names)
            for env_name in names:
                if environ.get(env_name):
                    layers[section][key] = environ[env_name]
                    break
    for section, values in (overrides or {}).items():
        if section not in layers:
            raise ConfigError(f"unknown config section {section!r}")
        layers[section].update({k: v for k, v in values.items() if v is not None})
    model = _build(ModelConfig, layers["model"], "model")
    sandbox = _build(SandboxPolicy, layers["sandbox"], "sandbox")
    return _build(AgentConfig, {**layers["agent"], "model": model, "sandbox": sandbox}, "agent")


def _build(cls: type, values: dict[str, Any], section: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(f"unknown [{section}] setting(s): {', '.join(unknown)}; known: {', '.join(fields)}")
    converted = {}
    for key, value in values.items():
        converted[key] = _convert(fields[key], value, section)
    try:
        return cls(**converted)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"[{section}] {e}") from e


def _convert(f: dataclasses.Field, value: Any, section: str) -> Any:
    """Coerce strings from the environment to the field's type; leave other values alone."""
    if not isinstance(value, str):
        return value
    kind = str(f.type)
    text = value.strip()
    try:
        if kind.startswith("int"):
            return int(text)
        if kind.startswith("float"):
            return float(text)
        if kind.startswith("bool"):
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if kind.startswith("dict"):
            return json.loads(text)
    except ValueError as e:
        raise ConfigError(f"[{section}] {f.name}: cannot read {value!r} as {kind}") from e
    return value
