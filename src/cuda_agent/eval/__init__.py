"""Evaluation: KernelBench-style runs of the agent, re-judging of submissions, Table-1 metrics and reports.

`records` (EvalRecord, records.jsonl) is the one row format between the runner and the metrics;
`metrics.compute_metrics` turns rows into the paper's Table 1 columns with bootstrap intervals;
`report.write_report` writes RUN/report.md, RUN/report.html, RUN/plots/*.png and RUN/metrics.json.
Imports are lazy so `import cuda_agent.eval` pulls in neither matplotlib nor the judge.
"""

from __future__ import annotations

from typing import Any

from cuda_agent.eval.records import EvalRecord, RecordError, append_record, read_records, write_records

__all__ = [
    "EvalRecord", "RecordError", "append_record", "compute_metrics", "read_records", "write_records", "write_report",
]


def compute_metrics(*args: Any, **kwargs: Any) -> Any:
    from cuda_agent.eval.metrics import compute_metrics as _compute

    return _compute(*args, **kwargs)


def write_report(*args: Any, **kwargs: Any) -> Any:
    from cuda_agent.eval.report import write_report as _write

    return _write(*args, **kwargs)
