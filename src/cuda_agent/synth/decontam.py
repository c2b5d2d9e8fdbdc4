"""Decontamination against a benchmark folder in KernelBench's layout (level1/, level2/, level3/).

A synthetic task is dropped when it is near a benchmark task on *both* axes: its operator sequence
(canonical op names in forward order, compared with difflib's ratio) and its normalised AST (Jaccard
similarity of 4-token shingles, names and sizes normalised away). Requiring both keeps tasks that merely
share an op list with a different structure, or a boilerplate structure with different ops. Thresholds
are configurable; each drop names the benchmark file and both scores.

Decontamination fails closed: a benchmark folder that does not exist or holds no readable task is an
error (`BenchmarkError`), never an index that silently removes nothing. `describe()` (path, task count,
digest of the files' contents) goes into the run's summary.json, so a dataset says what it was cleaned
against.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_agent.synth.astnorm import ast_tokens, jaccard, op_sequence, shingles


@dataclass(frozen=True)
class DecontamConfig:
    ops_threshold: float = 0.8
    ast_threshold: float = 0.7


@dataclass(frozen=True)
class BenchTask:
    path: str
    ops: tuple[str, ...]
    shingles: frozenset[tuple[str, ...]]


@dataclass(frozen=True)
class Match:
    """Why a task was dropped: the benchmark file it is near, and how near."""

    bench_path: str
    ops_similarity: float
    ast_similarity: float

    def describe(self) -> str:
        return f"near {self.bench_path} (ops {self.ops_similarity:.2f}, ast {self.ast_similarity:.2f})"


class BenchmarkError(ValueError):
    """The benchmark to decontaminate against is missing or empty; the message says what to pass."""


class BenchmarkIndex:
    """The benchmark tasks of a folder, preprocessed for fast comparison."""

    def __init__(
        self, tasks: list[BenchTask], config: DecontamConfig | None = None, root: str = "", digest: str = ""
    ) -> None:
        self.tasks = tasks
        self.config = config or DecontamConfig()
        self.root = root
        self.digest = digest

    def describe(self) -> dict[str, Any]:
        """Which benchmark this is: for summary.json."""
        return {"path": self.root, "tasks": len(self.tasks), "digest": self.digest}

    @classmethod
    def from_dir(cls, root: str | Path, config: DecontamConfig | None = None) -> BenchmarkIndex:
        root = Path(root)
        if not root.is_dir():
            what = "is not a folder" if root.exists() else "does not exist"
            raise BenchmarkError(
                f"benchmark {root} {what}: pass the folder holding level1/, level2/, ... (for KernelBench: "
                "git clone https://github.com/ScalingIntelligence/KernelBench, then --benchmark "
                "KernelBench/KernelBench)"
            )
        files = sorted(root.glob("level*/**/*.py")) or sorted(root.rglob("*.py"))
        tasks = []
        digest = hashlib.sha256()
        for f in files:
            try:
                source = f.read_text(encoding="utf-8", errors="replace")
                rel = str(f.relative_to(root))
                digest.update(f"{rel}\0{hashlib.sha256(source.encode()).hexdigest()}\n".encode())
                tasks.append(
                    BenchTask(
                        str(f.relative_to(root)),
                        tuple(op_sequence(source)),
                        frozenset(shingles(ast_tokens(source))),
                    )
                )
            except (SyntaxError, ValueError, OSError):
                continue
        if not tasks:
            raise BenchmarkError(
                f"benchmark {root} holds no readable task (.py files, KernelBench layout level*/...): "
                "decontaminating against it would remove nothing"
            )
        return cls(tasks, config, str(root.resolve()), digest.hexdigest())

    def __len__(self) -> int:
        return len(self.tasks)

    def nearest(self, source: str) -> Match | None:
        """The benchmark task this source is near on both axes (highest ops similarity), or None."""
        ops = op_sequence(source)
        sh = None
        best: Match | None = None
        for t in self.tasks:
            ops_sim = (
                difflib.SequenceMatcher(None, ops, list(t.ops), autojunk=False).ratio()
                if (ops or t.ops)
                else 1.0
            )
            if ops_sim < self.config.ops_threshold:
                continue
            if sh is None:
                sh = shingles(ast_tokens(source))
            ast_sim = jaccard(sh, set(t.shingles))
            if ast_sim < self.config.ast_threshold:
                continue
            if best is None or (ops_sim, ast_sim) > (best.ops_similarity, best.ast_similarity):
                best = Match(t.path, ops_sim, ast_sim)
        return best
