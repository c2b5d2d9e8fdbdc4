"""The paper's Table 1 metrics of an eval run, per KernelBench level and overall, with bootstrap intervals.

Definitions (docs/eval.md says the same; `DEFINITIONS` holds the one-line form the report prints).

Units. A *task* is a task_id; it has one EvalRecord per episode. A record is *correct* when its status is
`ok` (built, verified, and timed when timing ran). A *missing* task is one the caller expected
(`expected_tasks`) that has no record at all: it counts as one failed episode with nothing measured.

Selections. Every table is computed twice:
- `pass@1`: every episode counts, each task's episodes weighted equally (1/K_task), so a task that passes
  2 of 4 episodes contributes 0.5 to the pass rate. This is the expected result of ONE attempt per task
  (with K = 1 it is simply the run's result).
- `best_of_k`: one episode per task, the best by (correct, reward, speedup vs compile, speedup vs eager,
  lowest episode). All columns then describe the same chosen kernel. Note the choice itself looks at the
  judge's measurements, so it is optimistic by construction.

Weights. Each task of level L weighs W_L / n_L, where n_L is the number of tasks of level L in the run
(with records, plus missing ones) and W_L is `level_sizes[L]` (default n_L). A level row is therefore a
plain mean over its tasks; the overall row is sum_L W_L * row_L / sum_L W_L over the levels that have
tasks. With the default weights, overall is the plain mean over all tasks; with KernelBench's real sizes
(Level 1/2/3 = 100/100/50), a subset run is re-weighted to the benchmark's mix, as the paper's "overall"
weights levels by task count. Levels without tasks are reported empty (None) and left out of overall.

Columns (all rates have every task in the denominator: a failed or missing task is never faster):
- `pass_rate`: share correct.
- `faster_than_eager` / `faster_than_compile`: correct and median speedup (baseline_ms / candidate_ms,
  median of per-round ratios) strictly greater than 1.0. Exactly 1.0 is not faster.
- `*_5pct`: the same at strictly greater than the reward's base threshold `SPEEDUP_THRESHOLD` (1.05,
  cuda_agent.judge.SPEEDUP_THRESHOLD, the reward module's), on the median. Exactly 1.05 is not faster.
- `*_credited`: what the judge's reward credited: the lower 95% bound of the speedup strictly above
  max(1.05, that verdict's threshold), the threshold being 1.05 widened by the baseline's measured spread
  (docs/design/timing.md). For eager this is exactly reward >= 2; for compile it is read from the record's
  bound and threshold, or, for records without them, reward == 3 (which misses compile-only wins).
- `geomean_vs_eager_correct` / `geomean_vs_compile_correct`: exp of the weighted mean of log speedup over
  correct, timed records. None when there are none.
- `geomean_vs_eager_all` / `geomean_vs_compile_all`: over all tasks, a failure counted as falling back to
  eager PyTorch: speedup 1.0 vs eager, and compile_ms / eager_ms vs compile (the speedup over compile of
  running eager; baseline / candidate with candidate = eager). The baseline times of a failed record come
  from that record, else from another episode of the same task; a failure with no known baseline times
  (and a missing task) is left out of the compile column, and `n` says how many tasks remained.
- `mean_reward`: the weighted mean of the milestone reward (-1..3; a missing task is -1).
A correct record without timings (a `--no-timing` run) is correct but never faster, and is left out of
the geomeans (so their `n` is smaller than the task count).

Unjudgeable. A task whose every episode is `task_error` (the task, not the kernel, could not be judged) is
left out of every row and listed in `unjudgeable` (`unjudgeable_tasks`).

Unmeasured. A record whose status is in `UNMEASURED` (`built`: judged `--build-only`, the CPU checks
passed and nothing was verified or timed) is neither correct nor failed: nobody knows. Every column of a
row whose selection holds such a record is n/a (value None, `unmeasured` True), never "0% pass": with
one unknown task the share is unknown. In `best_of_k` a task whose best episode is known (an `ok` one)
counts as usual.

Intervals. 95% percentile bootstrap, resampling tasks with replacement within each level (the level sizes
and weights stay fixed), `bootstrap` replicates from numpy's default_rng(seed); the same resampled task
sets serve every column, so a run is reproducible bit for bit. A replicate in which a column is undefined
(e.g. no correct task drawn) is dropped for that column. The interval is widened to contain the point
estimate if the bootstrap distribution is lopsided enough to exclude it (possible only with very few
tasks). `bootstrap=0` gives no intervals; a single task gives a degenerate one.

Baseline. `compile_modes` counts the timed episodes per torch.compile mode of their compile baseline
(EvalRecord.compile_mode): every "vs compile" column is against that mode, and a run with two modes mixes
two baselines (the report says so).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from cuda_agent.eval.precision import at_parity
from cuda_agent.eval.records import EvalRecord, RecordError
from cuda_agent.judge import SPEEDUP_THRESHOLD

# Statuses that say nothing about correctness or speed, with why; their rows show n/a.
UNMEASURED: dict[str, str] = {
    "built": "judged build-only: the CPU checks passed, nothing was verified or timed (judge it on a GPU)",
}

CONFIDENCE = 0.95
SELECTIONS = ("pass@1", "best_of_k")
REWARDS = (-1, 0, 1, 2, 3)
_PCT = f"{(SPEEDUP_THRESHOLD - 1) * 100:.0f}%"

RATES = (
    "pass_rate",
    "faster_than_eager", "faster_than_eager_5pct", "faster_than_eager_credited",
    "faster_than_compile", "faster_than_compile_5pct", "faster_than_compile_credited",
)
GEOMEANS = ("geomean_vs_eager_correct", "geomean_vs_compile_correct", "geomean_vs_eager_all", "geomean_vs_compile_all")
# KernelBench's fast_p: the share of tasks whose kernel is correct and more than p times as fast as the
# baseline (fast_0 is the share correct, timed or not), at the thresholds KernelBench reports; each also
# counted over kernels at precision parity only (eval/precision.py).
FAST_P = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
BASELINES = ("eager", "compile")


def fast_column(p: float, baseline: str, parity: bool = False) -> str:
    """`fast_1.5_vs_compile`, `fast_1.5_vs_compile_parity`: the name of a fast_p column."""
    return f"fast_{p:g}_vs_{baseline}" + ("_parity" if parity else "")


FAST_COLUMNS = tuple(fast_column(p, b, parity) for parity in (False, True) for b in BASELINES for p in FAST_P)
COLUMNS = (*RATES, *GEOMEANS, "mean_reward", *FAST_COLUMNS)

DEFINITIONS: dict[str, str] = {
    "pass_rate": "share of tasks whose kernel is correct (status ok)",
    "faster_than_eager": "share correct with median speedup vs eager PyTorch > 1.0",
    "faster_than_eager_5pct": f"share correct with median speedup vs eager > {SPEEDUP_THRESHOLD} (the reward's base threshold)",
    "faster_than_eager_credited": f"share the reward credited as > {_PCT} faster than eager (lower 95% bound > "
    f"{SPEEDUP_THRESHOLD} widened by the baseline's spread; = reward >= 2)",
    "faster_than_compile": "share correct with median speedup vs torch.compile > 1.0",
    "faster_than_compile_5pct": f"share correct with median speedup vs torch.compile > {SPEEDUP_THRESHOLD}",
    "faster_than_compile_credited": f"share the reward credited as > {_PCT} faster than torch.compile (lower 95% "
    f"bound > {SPEEDUP_THRESHOLD} widened by the baseline's spread)",
    "geomean_vs_eager_correct": "geometric mean speedup vs eager over correct, timed kernels",
    "geomean_vs_compile_correct": "geometric mean speedup vs torch.compile over correct, timed kernels",
    "geomean_vs_eager_all": "geometric mean speedup vs eager over all tasks, a failure counted as eager (1.0)",
    "geomean_vs_compile_all": "geometric mean speedup vs torch.compile over all tasks, a failure counted as eager "
    "(compile_ms / eager_ms); failures without known baseline times left out",
    "mean_reward": "mean milestone reward (-1 failed, 1 correct, 2 > 5% faster than eager, 3 also than compile)",
    **{fast_column(p, b, parity): (f"fast_{p:g} vs {'eager' if b == 'eager' else 'torch.compile'}"
                                    + (" at precision parity" if parity else "") + ": share correct"
                                    + (f" with median speedup > {p:g}" if p else " (KernelBench's fast_0)")
                                    + (" and a precision-audit ratio within its bound k" if parity else ""))
       for parity in (False, True) for b in BASELINES for p in FAST_P},
}


@dataclass(frozen=True)
class Metric:
    """A point estimate with its bootstrap interval; `n` is the number of tasks behind the estimate."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0
    unmeasured: bool = False  # None because some record behind it was never measured (UNMEASURED): n/a


@dataclass(frozen=True)
class Row:
    """One level (or the overall row, level None) of one selection."""

    level: int | None
    tasks: int  # tasks in the run (with records + missing)
    missing: int  # expected tasks without any record
    episodes: int  # records behind the row
    weight: float  # W_L (overall: the sum over the levels it covers)
    metrics: dict[str, Metric]


@dataclass(frozen=True)
class RunMetrics:
    threshold: float
    confidence: float
    bootstrap: int
    seed: int
    level_sizes: dict[int, int]  # the weights W_L used
    levels: list[int]
    overall_levels: list[int]  # levels the overall row covers (those with tasks)
    episodes_per_task: dict[str, int]  # min / max K
    tables: dict[str, dict[str, Row]]  # selection -> "1", "2", ..., "overall" -> Row
    reward_counts: dict[str, dict[str, int]]  # "1".., "overall" -> reward -> episodes
    status_counts: dict[str, dict[str, int]]
    definitions: dict[str, str] = field(default_factory=lambda: dict(DEFINITIONS))
    compile_modes: dict[str, int] = field(default_factory=dict)  # timed episodes per torch.compile mode
    unjudgeable: list[str] = field(default_factory=list)  # tasks left out: `task_error` in every episode

    def row(self, level: int | str = "overall", selection: str = "pass@1") -> Row:
        return self.tables[selection][str(level)]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["level_sizes"] = {str(k): v for k, v in self.level_sizes.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunMetrics:
        """Read a metrics.json back (for `--compare`); keys a newer writer added are ignored."""
        try:
            tables = {
                sel: {key: _known(Row, {**row, "metrics": {k: _known(Metric, m) for k, m in row["metrics"].items()}})
                      for key, row in rows.items()}
                for sel, rows in data["tables"].items()
            }
            return _known(cls, {**data, "tables": tables,
                                "level_sizes": {int(k): v for k, v in data["level_sizes"].items()}})
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise RecordError(f"not a metrics.json written by cuda-agent eval: {error}") from error


def _known(cls: type, data: Mapping[str, Any]) -> Any:
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


# ------------------------------------------------------------------------------------------ per task


@dataclass
class _Task:
    task_id: str
    level: int
    records: list[EvalRecord]
    eager_ms: float | None = None  # baseline times known for this task (any episode)
    compile_ms: float | None = None


def _compile_credited(record: EvalRecord) -> bool:
    if not record.passed:
        return False
    if record.speedup_vs_compile_low is not None:
        bar = max(SPEEDUP_THRESHOLD, record.compile_threshold or SPEEDUP_THRESHOLD)
        return record.speedup_vs_compile_low > bar
    return record.reward == 3


def _episode_values(record: EvalRecord | None, task: _Task) -> dict[str, tuple[float, float]]:
    """(numerator, denominator) of each column for one episode (None: a missing task's one failure)."""
    nan = (0.0, 0.0)  # contributes nothing to either sum: left out
    if record is not None and record.status in UNMEASURED:  # unknown: makes every sum it enters unknown
        return dict.fromkeys(COLUMNS, (math.nan, 1.0))
    ok = record is not None and record.passed
    se = record.speedup_vs_eager if ok else None
    sc = record.speedup_vs_compile if ok else None
    values = {
        "pass_rate": (float(ok), 1.0),
        "faster_than_eager": (float(se is not None and se > 1.0), 1.0),
        "faster_than_eager_5pct": (float(se is not None and se > SPEEDUP_THRESHOLD), 1.0),
        "faster_than_eager_credited": (float(ok and record.reward >= 2), 1.0),
        "faster_than_compile": (float(sc is not None and sc > 1.0), 1.0),
        "faster_than_compile_5pct": (float(sc is not None and sc > SPEEDUP_THRESHOLD), 1.0),
        "faster_than_compile_credited": (float(record is not None and _compile_credited(record)), 1.0),
        "mean_reward": (float(record.reward if record is not None else -1), 1.0),
    }
    parity = record is not None and at_parity(record)
    for baseline, speedup in (("eager", se), ("compile", sc)):
        for p in FAST_P:
            fast = ok and (p == 0 or (speedup is not None and speedup > p))
            values[fast_column(p, baseline)] = (float(fast), 1.0)
            values[fast_column(p, baseline, parity=True)] = (float(fast and parity), 1.0)
    values["geomean_vs_eager_correct"] = (_log(se), 1.0) if se else nan
    values["geomean_vs_compile_correct"] = (_log(sc), 1.0) if sc else nan
    if ok:
        values["geomean_vs_eager_all"] = (_log(se), 1.0) if se else nan
        values["geomean_vs_compile_all"] = (_log(sc), 1.0) if sc else nan
    else:
        values["geomean_vs_eager_all"] = (0.0, 1.0)  # fell back to eager: speedup exactly 1
        eager, comp = task.eager_ms, task.compile_ms
        if record is not None and record.eager_ms and record.compile_ms:
            eager, comp = record.eager_ms, record.compile_ms
        values["geomean_vs_compile_all"] = (_log(comp / eager), 1.0) if eager and comp else nan
    return values


def _log(value: float) -> float:
    return math.log(value)  # records hold speedups > 0 (EvalRecord checks)


def passed_count(records: list[EvalRecord]) -> str:
    """How many of `records` passed, as "2/3"; "n/a (1 unmeasured)" when any of them was never measured
    (UNMEASURED), since the count is then unknown."""
    unmeasured = sum(r.status in UNMEASURED for r in records)
    if unmeasured:
        return f"n/a ({unmeasured} unmeasured)"
    return f"{sum(r.passed for r in records)}/{len(records)}"


def best_record(records: list[EvalRecord]) -> EvalRecord:
    """A task's best episode: correct first, then the highest reward, speedup vs compile, vs eager, and
    the earliest episode (the `best_of_k` selection; plots and the report's task table use it too)."""
    return max(records, key=lambda r: (r.passed, r.reward, r.speedup_vs_compile or 0.0,
                                       r.speedup_vs_eager or 0.0, -r.episode))


def _task_values(task: _Task, selection: str) -> dict[str, tuple[float, float]]:
    """Per-task (numerator, denominator): the mean over its episodes (pass@1) or its best episode."""
    if not task.records:
        return _episode_values(None, task)
    if selection == "best_of_k":
        return _episode_values(best_record(task.records), task)
    per_episode = [_episode_values(r, task) for r in task.records]
    k = len(per_episode)
    return {c: (sum(v[c][0] for v in per_episode) / k, sum(v[c][1] for v in per_episode) / k) for c in COLUMNS}


# ------------------------------------------------------------------------------------------ assembly


def _group(records: Iterable[EvalRecord], expected: Mapping[str, int]) -> dict[str, _Task]:
    tasks: dict[str, _Task] = {}
    seen: dict[tuple[str, int], int] = {}
    for record in records:
        if not isinstance(record, EvalRecord):
            raise RecordError(f"compute_metrics needs EvalRecords, got {type(record).__name__}")
        task = tasks.setdefault(record.task_id, _Task(record.task_id, record.level, []))
        if task.level != record.level:
            raise RecordError(f"task {record.task_id} appears with levels {task.level} and {record.level}")
        key = (record.task_id, record.episode)
        if key in seen:
            warnings.warn(f"{record.task_id} episode {record.episode} recorded twice; the later record counts",
                          stacklevel=3)
            task.records[seen[key]] = record
            continue
        seen[key] = len(task.records)
        task.records.append(record)
    for task_id, level in expected.items():
        if task_id in tasks:
            if tasks[task_id].level != level:
                raise RecordError(f"task {task_id} is expected at level {level} but recorded at {tasks[task_id].level}")
            continue
        tasks[task_id] = _Task(task_id, level, [])
    for task in tasks.values():
        timed = [r for r in task.records if r.eager_ms and r.compile_ms]
        if timed:
            task.eager_ms, task.compile_ms = timed[0].eager_ms, timed[0].compile_ms
    return tasks


def _expected(expected_tasks: Mapping[str, int] | Iterable[str] | None) -> dict[str, int]:
    if expected_tasks is None:
        return {}
    if isinstance(expected_tasks, Mapping):
        return {str(k): int(v) for k, v in expected_tasks.items()}
    result = {}
    for task_id in expected_tasks:
        match = re.match(r"level(\d+)/", task_id)
        if not match:
            raise RecordError(f"expected task {task_id!r}: give a {{task_id: level}} map, or ids like 'level1/19_ReLU'")
        result[task_id] = int(match.group(1))
    return result


def compute_metrics(
    records: list[EvalRecord],
    *,
    level_sizes: dict[int, int] | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    expected_tasks: Mapping[str, int] | Iterable[str] | None = None,
) -> RunMetrics:
    """Table 1 per level and overall, for both selections, with `bootstrap` replicates seeded by `seed`.

    `level_sizes` are the weights W_L of the overall row (KernelBench: {1: 100, 2: 100, 3: 50}); a level
    listed there without tasks is reported empty. `expected_tasks` names tasks that must count even
    without a record (as failures)."""
    if not isinstance(bootstrap, int) or bootstrap < 0:
        raise ValueError(f"bootstrap must be a non-negative integer, got {bootstrap!r}")
    tasks = _group(records, _expected(expected_tasks))
    unjudgeable = unjudgeable_tasks(tasks)
    for task_id in unjudgeable:
        del tasks[task_id]
    by_level: dict[int, list[_Task]] = {}
    for task in sorted(tasks.values(), key=lambda t: t.task_id):
        by_level.setdefault(task.level, []).append(task)
    sizes = _weights(by_level, level_sizes)
    levels = sorted(set(sizes) | set(by_level))
    covered = [lv for lv in levels if by_level.get(lv)]
    rng = np.random.default_rng(seed)
    draws = {lv: rng.integers(0, len(by_level[lv]), size=(bootstrap, len(by_level[lv]))) for lv in covered}
    tables = {sel: _table(sel, by_level, levels, covered, sizes, draws) for sel in SELECTIONS}
    ks = [len(t.records) for t in tasks.values() if t.records]
    return RunMetrics(
        threshold=SPEEDUP_THRESHOLD,
        confidence=CONFIDENCE,
        bootstrap=bootstrap,
        seed=seed,
        level_sizes=sizes,
        levels=levels,
        overall_levels=covered,
        episodes_per_task={"min": min(ks, default=0), "max": max(ks, default=0)},
        tables=tables,
        reward_counts=_counts(by_level, levels, lambda r: str(r.reward), [str(r) for r in REWARDS]),
        status_counts=_counts(by_level, levels, lambda r: r.status, []),
        compile_modes=compile_modes(records),
        unjudgeable=unjudgeable,
    )


def unjudgeable_tasks(tasks: Mapping[str, _Task]) -> list[str]:
    """Tasks whose every episode the judge refused as a task (`task_error`: the reference fails, the task is
    degenerate at its sizes, as 27 of KernelBench's were on the H200 (docs/kernelbench_degeneracy.md), or it
    does not fit the GPU). No kernel could pass them, so counted as failures they lower every model's rates
    alike and say nothing about the model: they are left out of every row, and named."""
    return sorted(t.task_id for t in tasks.values() if t.records and all(r.status == "task_error" for r in t.records))


def compile_modes(records: Iterable[EvalRecord]) -> dict[str, int]:
    """Timed episodes per torch.compile mode of their compile baseline, in name order."""
    counts: dict[str, int] = {}
    for record in records:
        if record.compile_mode is not None:
            counts[record.compile_mode] = counts.get(record.compile_mode, 0) + 1
    return dict(sorted(counts.items()))


def _weights(by_level: dict[int, list[_Task]], level_sizes: dict[int, int] | None) -> dict[int, int]:
    if level_sizes is None:
        return {lv: len(ts) for lv, ts in by_level.items()}
    sizes = {}
    for lv, size in level_sizes.items():
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ValueError(f"level_sizes[{lv}] must be a positive integer, got {size!r}")
        sizes[int(lv)] = size
    for lv, ts in by_level.items():
        if lv not in sizes:
            raise ValueError(f"level {lv} has tasks but no size in level_sizes {dict(level_sizes)}: add it")
        if len(ts) > sizes[lv]:
            raise ValueError(f"level {lv} has {len(ts)} tasks in the run but level_sizes says {sizes[lv]}")
    return sizes


def _table(selection: str, by_level: dict[int, list[_Task]], levels: list[int], covered: list[int],
           sizes: dict[int, int], draws: dict[int, np.ndarray]) -> dict[str, Row]:
    # per level and column: arrays of per-task numerators and denominators
    arrays: dict[int, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for lv in covered:
        values = [_task_values(t, selection) for t in by_level[lv]]
        arrays[lv] = {c: (np.array([v[c][0] for v in values]), np.array([v[c][1] for v in values])) for c in COLUMNS}
    rows: dict[str, Row] = {}
    for lv in levels:
        ts = by_level.get(lv, [])
        if not ts:
            rows[str(lv)] = Row(lv, 0, 0, 0, float(sizes.get(lv, 0)), {c: Metric(None) for c in COLUMNS})
            continue
        rows[str(lv)] = Row(lv, len(ts), sum(1 for t in ts if not t.records), sum(len(t.records) for t in ts),
                            float(sizes[lv]), {c: _estimate(c, [lv], arrays, sizes, draws) for c in COLUMNS})
    all_tasks = [t for lv in covered for t in by_level[lv]]
    rows["overall"] = Row(None, len(all_tasks), sum(1 for t in all_tasks if not t.records),
                          sum(len(t.records) for t in all_tasks), float(sum(sizes[lv] for lv in covered)),
                          {c: _estimate(c, covered, arrays, sizes, draws) for c in COLUMNS})
    return rows


def _estimate(column: str, levels: list[int], arrays: dict, sizes: dict[int, int], draws: dict) -> Metric:
    """Point estimate and percentile interval of sum_w(num) / sum_w(den) over `levels` (exp for geomeans)."""
    if not levels:
        return Metric(None)
    num = den = 0.0
    n = 0
    boot_num = boot_den = None
    for lv in levels:
        nums, dens = arrays[lv][column]
        w = sizes[lv] / len(nums)
        num += w * float(nums.sum())
        den += w * float(dens.sum())
        n += int(np.count_nonzero(dens))
        idx = draws[lv]
        if idx.shape[0]:
            bn, bd = w * nums[idx].sum(axis=1), w * dens[idx].sum(axis=1)
            boot_num = bn if boot_num is None else boot_num + bn
            boot_den = bd if boot_den is None else boot_den + bd
    if math.isnan(num):
        return Metric(None, n=n, unmeasured=True)
    geo = column.startswith("geomean")
    value = _finish(num, den, geo)
    if value is None or boot_num is None:
        return Metric(value, n=n)
    defined = boot_den > 0  # a replicate that drew no task this column covers says nothing about it
    reps = boot_num[defined] / boot_den[defined]
    if reps.size == 0:
        return Metric(value, n=n)
    alpha = (1 - CONFIDENCE) / 2
    low, high = np.quantile(reps, [alpha, 1 - alpha])
    if geo:
        low, high = math.exp(low), math.exp(high)
    return Metric(value, min(float(low), value), max(float(high), value), n)


def _finish(num: float, den: float, geo: bool) -> float | None:
    if den <= 0:
        return None
    return math.exp(num / den) if geo else float(num / den)


def _counts(by_level: dict[int, list[_Task]], levels: list[int], key: Any, always: list[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    overall = dict.fromkeys(always, 0)
    for lv in levels:
        counts = dict.fromkeys(always, 0)
        for task in by_level.get(lv, []):
            for record in task.records:
                counts[key(record)] = counts.get(key(record), 0) + 1
                overall[key(record)] = overall.get(key(record), 0) + 1
        out[str(lv)] = counts
    out["overall"] = overall
    return out
