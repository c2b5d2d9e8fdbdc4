"""Cache of baseline timings, keyed by task, GPU, driver, torch version and timing protocol version.

Baselines are always measured by the reference worker, a process that never loaded a candidate. The
cache stores per-round medians so speedups against a cached baseline still get a confidence bound.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.judge.build import cache_root
from cuda_agent.judge.timing import PROTOCOL_VERSION


@dataclass(frozen=True)
class BaselineRecord:
    eager_samples: list[float]
    compile_samples: list[float]
    eager_rounds: list[float]
    compile_rounds: list[float]
    overhead_ms: float  # host-clock cost per sample beyond the events, for the escape cross-check


def default_cache_dir() -> Path:
    return cache_root() / "baselines"


def cache_key(task_digest: str, environment_key: str) -> str:
    return hashlib.sha256(f"{task_digest}|{environment_key}|{PROTOCOL_VERSION}".encode()).hexdigest()


class BaselineCache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or default_cache_dir()

    def get(self, key: str) -> BaselineRecord | None:
        path = self.root / f"{key}.json"
        try:
            data = json.loads(path.read_text())
            return BaselineRecord(**data)
        except (OSError, ValueError, TypeError):
            return None

    def put(self, key: str, record: BaselineRecord) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(record.__dict__))
        os.replace(tmp, self.root / f"{key}.json")
