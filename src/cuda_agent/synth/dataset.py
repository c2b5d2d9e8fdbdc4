"""Datasets on disk: our parquet output, and the published CUDA-Agent-Ops-6K.

Columns follow Ops-6K (`code`, `ops`, `data_source` as `torch#k` or `transformers`), with `ops` stored as a
JSON string as in the published file, plus our metadata: eager and compile times, the GPU, timing status
and the filter log (JSON). The file loads with Hugging Face `datasets` (`load_dataset("parquet", ...)`).
`load_ops6k` reads either layout into `cuda_agent.task.Task`s, which is what the rest of the system uses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from cuda_agent.task import Task

OPS6K_HUB_ID = "BytedTsinghua-SIA/CUDA-Agent-Ops-6K"

COLUMNS: tuple[tuple[str, str], ...] = (
    ("code", "string"),
    ("ops", "string"),
    ("data_source", "string"),
    ("name", "string"),
    ("eager_ms", "float64"),
    ("compile_ms", "float64"),
    ("gpu", "string"),
    ("device", "string"),
    ("timing", "string"),
    ("filter_log", "string"),
    ("ast_digest", "string"),
    ("composer", "string"),
    ("seed", "int64"),
)


def record_to_row(rec: dict[str, Any]) -> dict[str, Any]:
    """One accepted journal record as a parquet row."""
    return {
        "code": rec["code"],
        "ops": json.dumps(list(rec.get("ops") or [])),
        "data_source": rec.get("data_source", ""),
        "name": rec.get("name", ""),
        "eager_ms": rec.get("eager_ms"),
        "compile_ms": rec.get("compile_ms"),
        "gpu": rec.get("gpu") or "",
        "device": rec.get("device") or "",
        "timing": rec.get("timing") or "",
        "filter_log": json.dumps(rec.get("log") or []),
        "ast_digest": rec.get("ast_digest") or "",
        "composer": rec.get("composer") or "template",
        "seed": int(rec.get("seed") or 0),
    }


def write_parquet(records: Iterable[dict[str, Any]], path: str | Path) -> Path:
    """Write accepted records as parquet (atomically: a temp file renamed into place)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [record_to_row(r) for r in records]
    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in COLUMNS])
    table = pa.Table.from_pylist(rows, schema=schema)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)
    return path


def parse_ops(value: Any) -> list[str]:
    """Ops-6K's `ops` column: a JSON list string, a Python list/array, or a plain comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                return [str(v) for v in json.loads(text)]
            except json.JSONDecodeError:
                import ast

                return [str(v) for v in ast.literal_eval(text)]
        return [v.strip() for v in text.split(",") if v.strip()]
    return [str(v) for v in list(value)]


def _rows_from_path(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    files = sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
    rows: list[dict[str, Any]] = []
    for f in files:
        rows += pq.read_table(f).to_pylist()
    return rows


def _rows_from_hub(hub_id: str, split: str) -> list[dict[str, Any]]:
    from datasets import load_dataset

    return [dict(r) for r in load_dataset(hub_id, split=split)]


def load_ops6k(path_or_hub_id: str | Path = OPS6K_HUB_ID, *, split: str = "train") -> list[Task]:
    """Tasks from an Ops-6K-style parquet file or folder, or from the Hub id when online.

    Each task's metadata keeps `ops` (a list), `data_source`, the row index and every other column.
    """
    path = Path(path_or_hub_id)
    rows = _rows_from_path(path) if path.exists() else _rows_from_hub(str(path_or_hub_id), split)
    tasks = []
    for i, row in enumerate(rows):
        code = row.get("code")
        if not code:
            continue
        ops = parse_ops(row.get("ops"))
        meta = {k: v for k, v in row.items() if k not in ("code", "ops")}
        meta.update(ops=ops, row=i, origin=str(path_or_hub_id))
        name = row.get("name") or f"ops6k_{i:05d}"
        tasks.append(Task(name=str(name), source=str(code), path=None, metadata=meta))
    return tasks


def read_journal(path: str | Path) -> list[dict[str, Any]]:
    """Records of a JSONL journal; a torn last line (interrupted write) is skipped."""
    path = Path(path)
    if not path.is_file():
        return []
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def accepted_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("status") == "accepted"]
