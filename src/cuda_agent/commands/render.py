"""Readable tables for verdicts (the CLI's human output; `--json` is the machine-readable one)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cuda_agent.judge import Verdict


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [
        max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join([line, sep, *body])


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def verdict_table(verdicts: Sequence[tuple[Path, Verdict]]) -> str:
    rows = []
    for path, v in verdicts:
        t = v.timing
        rows.append([
            path.name or str(path), v.status.value, f"{v.reward:+d}",
            _ms(t.candidate_ms if t else None), _ms(t.eager_ms if t else None), _ms(t.compile_ms if t else None),
            f"{t.speedup_vs_eager:.2f}x" if t else "-", f"{t.speedup_vs_compile:.2f}x" if t else "-",
        ])  # fmt: skip
    out = [
        table(
            ["submission", "status", "reward", "ms", "eager ms", "compile ms", "vs eager", "vs compile"], rows
        )
    ]
    for path, v in verdicts:
        out.append(f"\n{path}: {v.reason}")
        if v.compile_log:
            out.append(v.compile_log)
    return "\n".join(out)
