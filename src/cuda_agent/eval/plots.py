"""The eval report's PNG plots (matplotlib, Agg backend: no display needed, nothing shown).

Each function draws one figure from records or metrics, writes it to `path` and returns the path. A plot
whose data is empty (no correct, timed kernel) is still written, with a note saying so, so that the
report never points at a missing image. Task names never reach a plot; only levels and numbers do.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cuda_agent.eval.metrics import BASELINES, FAST_P, RunMetrics, best_record, fast_column
from cuda_agent.eval.paper import PaperRow
from cuda_agent.eval.records import EvalRecord

LEVEL_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")
COMPARE_COLOR = "#7f7f7f"
PAPER_COLOR = "#d62728"
RATE_COLUMNS = ("pass_rate", "faster_than_eager", "faster_than_compile", "faster_than_eager_5pct",
                "faster_than_compile_5pct")
RATE_LABELS = ("pass", "> eager", "> compile", "> 1.05x eager", "> 1.05x compile")


def available() -> bool:
    """Whether matplotlib can be imported (the report is written without plots when it cannot)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    _pyplot().close(fig)
    return path


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#555555")
    ax.set_xticks([])
    ax.set_yticks([])


def _log_axis(axis) -> None:
    """Log scale labelled 0.5x, 1x, 2x... rather than 5x10^-1."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    axis.set_minor_formatter(NullFormatter())


def _level_color(level: int) -> str:
    return LEVEL_COLORS[(level - 1) % len(LEVEL_COLORS)]


def _speedups(records: Sequence[EvalRecord], level: int, key: str) -> list[float]:
    return [getattr(r, key) for r in records if r.level == level and r.passed and getattr(r, key)]


def plot_speedup_distributions(records: Sequence[EvalRecord], path: Path, *, compare: Sequence[EvalRecord] = (),
                               compare_label: str = "compare") -> Path:
    """Per level, the speedups of correct, timed episodes vs eager (left) and vs torch.compile (right),
    as boxes with every point jittered over them; the other run's beside them in grey."""
    plt = _pyplot()
    levels = sorted({r.level for r in records} | {r.level for r in compare})
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), dpi=110)
    rng = np.random.default_rng(0)  # jitter only; fixed so the same run draws the same picture
    for ax, key, title in zip(axes, ("speedup_vs_eager", "speedup_vs_compile"), ("vs eager", "vs torch.compile"), strict=True):
        drawn = False
        for i, level in enumerate(levels):
            for offset, rows, color, hatch in ((-0.18 if compare else 0.0, records, _level_color(level), ""),
                                               (0.18, compare, COMPARE_COLOR, "//")):
                values = _speedups(rows, level, key)
                if not values:
                    continue
                drawn = True
                box = ax.boxplot([values], positions=[i + offset], widths=0.3, patch_artist=True,
                                 showfliers=False)
                for patch in box["boxes"]:
                    patch.set(facecolor=color, alpha=0.35, hatch=hatch)
                ax.scatter(i + offset + rng.uniform(-0.08, 0.08, len(values)), values, s=10, color=color, zorder=3)
        if not drawn:
            _empty(ax, "no correct, timed kernels")
        else:
            ax.set_yscale("log")
            _log_axis(ax.yaxis)
            ax.axhline(1.0, color="black", lw=0.8)
            ax.axhline(1.05, color="black", lw=0.8, ls="--")
            ax.set_xticks(range(len(levels)), [f"Level {lv}" for lv in levels])
            ax.set_ylabel("speedup (log scale)")
        ax.set_title(f"speedup {title}")
        ax.grid(alpha=0.3, axis="y")
    if compare:
        fig.suptitle(f"colours: this run; grey, hatched: {compare_label}", fontsize=9)
    return _save(fig, path)


def plot_task_scatter(records: Sequence[EvalRecord], path: Path, *, compare: Sequence[EvalRecord] = (),
                      compare_label: str = "compare") -> Path:
    """One point per task (its best episode): speedup vs eager (x) against vs torch.compile (y), log-log;
    the quadrant lines at 1.0 split faster/slower than each baseline."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 5), dpi=110)
    drawn = False
    for rows, marker, label_of in ((records, "o", lambda lv: f"Level {lv}"), (compare, "x", lambda lv: None)):
        by_task: dict[str, list[EvalRecord]] = {}
        for r in rows:
            by_task.setdefault(r.task_id, []).append(r)
        best = [best_record(rs) for rs in by_task.values()]
        best = [r for r in best if r.passed and r.speedup_vs_eager and r.speedup_vs_compile]
        for level in sorted({r.level for r in best}):
            pts = [r for r in best if r.level == level]
            color = _level_color(level) if marker == "o" else COMPARE_COLOR
            ax.scatter([r.speedup_vs_eager for r in pts], [r.speedup_vs_compile for r in pts], marker=marker,
                       color=color, s=22, label=label_of(level), alpha=0.85)
            drawn = True
    if not drawn:
        _empty(ax, "no correct, timed kernels")
    else:
        ax.set_xscale("log")
        ax.set_yscale("log")
        _log_axis(ax.xaxis)
        _log_axis(ax.yaxis)
        ax.axvline(1.0, color="black", lw=0.8)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xlabel("speedup vs eager")
        ax.set_ylabel("speedup vs torch.compile")
        if compare:
            ax.scatter([], [], marker="x", color=COMPARE_COLOR, label=compare_label)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, which="both")
    ax.set_title("per task (best episode)")
    return _save(fig, path)


def plot_rates(metrics: RunMetrics, path: Path, *, compare: RunMetrics | None = None, compare_label: str = "compare",
               paper: PaperRow | None = None, selection: str = "pass@1") -> Path:
    """Pass and faster-than rates per level and overall with their 95% intervals as error bars, beside
    the other run's overall row and the paper's (where it has a value)."""
    plt = _pyplot()
    series: list[tuple[str, str, list[float | None], list[tuple[float, float] | None]]] = []
    table = metrics.tables[selection]
    for key in [str(lv) for lv in metrics.levels] + ["overall"]:
        row = table[key]
        if not row.tasks:
            continue
        color = _level_color(int(key)) if key != "overall" else "#17becf"
        series.append((f"Level {key}" if key != "overall" else "overall", color, *_values(row.metrics)))
    if compare is not None and compare.tables[selection]["overall"].tasks:
        series.append((f"{compare_label} overall", COMPARE_COLOR, *_values(compare.tables[selection]["overall"].metrics)))
    if paper is not None:
        values = [paper.value_for(c) for c in RATE_COLUMNS]
        if any(v is not None for v in values):
            series.append(("paper overall", PAPER_COLOR, values, [None] * len(values)))
    fig, ax = plt.subplots(figsize=(10, 4.2), dpi=110)
    if not series:
        _empty(ax, "no tasks")
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(RATE_COLUMNS))
    for i, (label, color, values, cis) in enumerate(series):
        pos = x - 0.4 + width * (i + 0.5)
        heights = [v * 100 if v is not None else 0.0 for v in values]
        err = np.array([[(v - ci[0]) * 100, (ci[1] - v) * 100] if v is not None and ci else [0.0, 0.0]
                        for v, ci in zip(values, cis, strict=True)]).T
        has_ci = any(ci is not None for ci in cis)
        ax.bar(pos, heights, width, color=color, label=label, yerr=err if has_ci else None, capsize=2, alpha=0.9)
        for p, v in zip(pos, values, strict=True):
            if v is None:
                ax.text(p, 1, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
    if series:
        ax.set_xticks(x, RATE_LABELS)
        ax.set_ylim(0, 125)  # headroom for the legend above the 100% bars
        ax.set_yticks(range(0, 101, 20))
        ax.set_ylabel("% of tasks")
        ax.legend(fontsize=8, ncol=min(len(series), 4), loc="upper center")
        ax.grid(alpha=0.3, axis="y")
    ax.set_title(f"pass and faster-than rates ({selection}), 95% bootstrap intervals")
    return _save(fig, path)


def _values(row_metrics: dict) -> tuple[list[float | None], list[tuple[float, float] | None]]:
    values, cis = [], []
    for column in RATE_COLUMNS:
        metric = row_metrics[column]
        values.append(metric.value)
        cis.append((metric.low, metric.high) if metric.low is not None and metric.value is not None else None)
    return values, cis


def plot_rewards(metrics: RunMetrics, path: Path, *, compare: RunMetrics | None = None,
                 compare_label: str = "compare") -> Path:
    """The share of episodes at each milestone reward (-1, 0, 1, 2, 3), per level, and the other run's
    overall share (shares, so runs of different sizes compare)."""
    plt = _pyplot()
    rewards = ["-1", "0", "1", "2", "3"]
    series = []
    for key in [str(lv) for lv in metrics.levels]:
        counts = metrics.reward_counts.get(key, {})
        if sum(counts.values()):
            series.append((f"Level {key}", _level_color(int(key)), counts))
    if compare is not None and sum(compare.reward_counts.get("overall", {}).values()):
        series.append((f"{compare_label} overall", COMPARE_COLOR, compare.reward_counts["overall"]))
    fig, ax = plt.subplots(figsize=(6.5, 4), dpi=110)
    if not series:
        _empty(ax, "no episodes")
    width = 0.8 / max(len(series), 1)
    for i, (label, color, counts) in enumerate(series):
        total = sum(counts.values())
        shares = [100 * counts.get(r, 0) / total for r in rewards]
        ax.bar(np.arange(len(rewards)) - 0.4 + width * (i + 0.5), shares, width, color=color,
               label=f"{label} (n={total})")
    if series:
        ax.set_xticks(range(len(rewards)), rewards)
        ax.set_xlabel("milestone reward")
        ax.set_ylabel("% of episodes")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    ax.set_title("reward distribution")
    return _save(fig, path)



def plot_fast_p(metrics: RunMetrics, path: Path, *, selection: str = "pass@1") -> Path:
    """KernelBench's fast_p curve against both baselines: for each p, the share of tasks correct and more
    than p times as fast; overall with its 95% interval, per level, and overall at precision parity
    (dashed: kernels whose precision-audit ratio is within its bound)."""
    plt = _pyplot()
    table = metrics.tables[selection]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=110, sharey=True)
    for ax, baseline in zip(axes, BASELINES, strict=True):
        if not table["overall"].tasks:
            _empty(ax, "no tasks")
            continue
        keys = [(str(lv), _level_color(lv), 1.0) for lv in metrics.levels if table[str(lv)].tasks]
        for key, color, width in [*keys, ("overall", "#17becf", 2.2)]:
            cells = [table[key].metrics.get(fast_column(p, baseline)) for p in FAST_P]
            values = [100 * c.value if c is not None and c.value is not None else np.nan for c in cells]
            label = "overall" if key == "overall" else f"Level {key}"
            if key == "overall":
                err = np.array([[v - 100 * c.low, 100 * c.high - v] if c is not None and c.low is not None
                                and not np.isnan(v) else [0.0, 0.0] for v, c in zip(values, cells, strict=True)]).T
                ax.errorbar(FAST_P, values, yerr=err, color=color, lw=width, marker="o", capsize=3, label=label)
                parity = [table[key].metrics.get(fast_column(p, baseline, parity=True)) for p in FAST_P]
                ax.plot(FAST_P, [100 * c.value if c is not None and c.value is not None else np.nan for c in parity],
                        color=color, lw=1.5, ls="--", marker="s", label="overall, precision parity")
            else:
                ax.plot(FAST_P, values, color=color, lw=width, marker=".", alpha=0.8, label=label)
        ax.set_xticks(FAST_P, [f"{p:g}" for p in FAST_P])
        ax.set_xlabel(f"p (speedup over {'eager PyTorch' if baseline == 'eager' else 'torch.compile'})")
        ax.set_ylim(0, 105)
        ax.grid(alpha=0.3)
        ax.set_title(f"fast_p vs {baseline}")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("% of tasks correct and > p times as fast")
    fig.suptitle(f"fast_p ({selection}), 95% bootstrap intervals", fontsize=10)
    return _save(fig, path)
