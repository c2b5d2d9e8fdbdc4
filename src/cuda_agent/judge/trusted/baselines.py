"""Cache of baseline timings, keyed by task, GPU, driver, torch version, timing protocol version, the
math policy the baselines ran under (common/math_policy.py: a baseline timed with TF32 convolutions is
not one of an fp32 task) and the torch.compile mode of the compile baseline (compile_modes.py: a
max-autotune baseline is never served to a judgment asked for the default one, nor the other way round).

Baselines are always measured by the reference worker, a process that never loaded a candidate. The
cache stores per-round medians so speedups against a cached baseline still get a confidence bound.

Trust boundary: a record is a fact the reward depends on, and the cache folder may be writable by the
candidate (a judge that does not run as root runs the candidate as its own user). So every record is
authenticated: an HMAC-SHA256 over its cache key and contents, under a key the candidate never sees
(authkey.py). A record that does not verify -- forged, edited, copied from another key, or signed by
another judge process's private key -- is ignored and the baselines are measured again.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cuda_agent.judge.candidate.sampler import PROTOCOL_VERSION
from cuda_agent.judge.common.math_policy import POLICY
from cuda_agent.judge.trusted.authkey import sign, verify
from cuda_agent.judge.trusted.build import cache_root
from cuda_agent.judge.trusted.compile_modes import DEFAULT as DEFAULT_COMPILE_MODE
from cuda_agent.judge.trusted.compile_modes import check_compile_mode

MAX_RECORD_BYTES = 4 << 20


@dataclass(frozen=True)
class BaselineRecord:
    eager_samples: list[float]
    compile_samples: list[float]
    eager_rounds: list[float]
    compile_rounds: list[float]
    overhead_ms: float  # host-clock cost per call beyond the events (decide/stats.py: HostClock)
    # Median of each fresh torch.compile build timed (the fastest is the baseline) and the relative spread
    # the reward threshold adds as a margin (timing.baseline_spread).
    compile_builds_ms: list[float] = field(default_factory=list)
    eager_spread: float = 0.0
    compile_spread: float = 0.0
    overhead_margin_ms: float = 0.0  # the HostClock's margin
    pad_ms: float = 0.0  # the pad the baselines were timed with


def default_cache_dir() -> Path:
    return cache_root() / "baselines"


def cache_key(task_digest: str, environment_key: str, compile_mode: str = DEFAULT_COMPILE_MODE,
              pad_release: bool = False, round_calls: int | None = None,
              compile_builds: int | None = None) -> str:  # fmt: skip
    """The record's name, and what its HMAC covers with its contents: a record copied to another mode's
    (or task's, or GPU's, or pad's) name does not verify there. The record itself is unchanged by them.
    `pad_release`: whether the pads waited for the host's release (candidate/pad.py, TimingConfig).
    `round_calls`: the calls per round where memory cut them below the configured number (decide/
    round_size.py); None for the configured number, so the records of every other task keep their names.
    `compile_builds`: the fresh torch.compile builds the baseline is the fastest of, where not the default
    (None): a baseline of one build must not stand in for one of three."""
    mode = check_compile_mode(compile_mode)
    pads = "|pads:host-release" if pad_release else ""
    calls = f"|round-calls:{round_calls}" if round_calls is not None else ""
    builds = f"|compile-builds:{compile_builds}" if compile_builds is not None else ""
    return hashlib.sha256(
        f"{task_digest}|{environment_key}|{PROTOCOL_VERSION}|{POLICY}|compile:{mode}{pads}{calls}{builds}".encode()
    ).hexdigest()


def _payload(key: str, record: dict) -> bytes:
    return json.dumps({"key": key, "record": record}, sort_keys=True, separators=(",", ":")).encode()


class BaselineCache:
    """Records on disk, each authenticated with `secret` (from authkey.judge_key)."""

    def __init__(self, root: Path | None = None, *, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("the cache needs a secret of at least 16 bytes")
        self.root = root or default_cache_dir()
        self._secret = secret
        self.rejected = 0  # records found but refused (failed authentication or unreadable)

    def get(self, key: str) -> BaselineRecord | None:
        path = self.root / f"{key}.json"
        try:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_RECORD_BYTES + 1)
        except OSError:
            return None
        try:
            data = json.loads(raw) if len(raw) <= MAX_RECORD_BYTES else None
            record = data["record"] if isinstance(data, dict) else None
            if not isinstance(record, dict) or not verify(self._secret, _payload(key, record), data.get("mac")):
                raise ValueError("record failed authentication")
            return BaselineRecord(**record)
        except (ValueError, TypeError, KeyError):
            self.rejected += 1
            return None

    def put(self, key: str, record: BaselineRecord) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        body = asdict(record)
        data = {"key": key, "record": body, "mac": sign(self._secret, _payload(key, body))}
        tmp = self.root / f".{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.root / f"{key}.json")
