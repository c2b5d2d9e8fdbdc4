"""The eval report: RUN/report.md, a self-contained RUN/report.html, RUN/plots/*.png and RUN/metrics.json.

Both documents are rendered from one list of sections (tables, text, images, definitions), so the
Markdown and the HTML say the same thing. The HTML needs nothing but itself: CSS inline, PNGs embedded as
base64 data URIs, and a Content-Security-Policy that forbids every other load (and any script), so a
report mailed around or opened from an artifact store shows the same and cannot phone home.

Strings from records (task names, failure reasons, statuses) come from candidate kernels and model output
and are untrusted: every cell is HTML-escaped, and in Markdown also stripped of table and link syntax.
"""

from __future__ import annotations

import base64
import html
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cuda_agent.eval import paper, plots
from cuda_agent.eval.metrics import (
    BASELINES,
    DEFINITIONS,
    FAST_P,
    UNMEASURED,
    Metric,
    RunMetrics,
    best_record,
    compute_metrics,
    fast_column,
    passed_count,
)
from cuda_agent.eval.precision import precision_label
from cuda_agent.eval.records import EvalRecord, read_records

HELD_OUT_RESULT = "held_out.json"  # eval/held_out.py writes it

REASON_CHARS = 200  # a failure reason is cut to this in the task table (the verdict keeps it whole)

HEADLINE = ("pass_rate", "faster_than_eager", "faster_than_compile", "geomean_vs_eager_correct",
            "geomean_vs_eager_all", "geomean_vs_compile_correct", "geomean_vs_compile_all")
THRESHOLD_COLUMNS = ("faster_than_eager_5pct", "faster_than_eager_credited", "faster_than_compile_5pct",
                     "faster_than_compile_credited")
SHORT = {
    "pass_rate": "pass",
    "faster_than_eager": "> eager",
    "faster_than_compile": "> compile",
    "faster_than_eager_5pct": "> 1.05x eager (median)",
    "faster_than_eager_credited": "> eager, credited",
    "faster_than_compile_5pct": "> 1.05x compile (median)",
    "faster_than_compile_credited": "> compile, credited",
    "geomean_vs_eager_correct": "geomean vs eager (correct)",
    "geomean_vs_eager_all": "geomean vs eager (all)",
    "geomean_vs_compile_correct": "geomean vs compile (correct)",
    "geomean_vs_compile_all": "geomean vs compile (all)",
    "mean_reward": "mean reward",
}
PLOTS = ("speedups", "scatter", "rates", "rewards", "fast_p")


@dataclass
class Run:
    """A finished run read back from its folder (for `--compare`)."""

    label: str
    records: list[EvalRecord]
    metrics: RunMetrics


@dataclass
class Section:
    title: str
    text: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    images: list[tuple[str, Path]] = field(default_factory=list)  # (alt text, png)
    terms: list[tuple[str, str]] = field(default_factory=list)


def load_run(run_dir: Path, *, like: RunMetrics | None = None) -> Run:
    """Read RUN/records.jsonl and RUN/metrics.json; metrics are recomputed from the records (with `like`'s
    bootstrap, seed and, if they fit, level sizes) when metrics.json is absent."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"--compare {run_dir}: no such run folder")
    records = read_records(run_dir / "records.jsonl")
    metrics_path = run_dir / "metrics.json"
    if metrics_path.exists():
        try:
            data = json.loads(metrics_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(f"{metrics_path}: not JSON ({error})") from error
        metrics = RunMetrics.from_dict(data)
    elif records:
        sizes = like.level_sizes if like is not None and _fits(records, like.level_sizes) else None
        metrics = compute_metrics(records, level_sizes=sizes, bootstrap=like.bootstrap if like else 1000,
                                  seed=like.seed if like else 0)
    else:
        raise ValueError(f"{run_dir} has neither records.jsonl nor metrics.json: is it an eval run folder?")
    return Run(run_dir.resolve().name or str(run_dir), records, metrics)


def _fits(records: Sequence[EvalRecord], sizes: dict[int, int]) -> bool:
    tasks: dict[int, set[str]] = {}
    for r in records:
        tasks.setdefault(r.level, set()).add(r.task_id)
    return all(lv in sizes and len(ts) <= sizes[lv] for lv, ts in tasks.items())


def write_report(run_dir: Path, records: Sequence[EvalRecord], metrics: RunMetrics, *,
                 compare_run: Path | None = None, title: str | None = None) -> dict[str, Path]:
    """Write the report files into `run_dir`; returns them by name (report.md, report.html, metrics.json,
    plots/<name>.png)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    records = list(records)
    other = load_run(compare_run, like=metrics) if compare_run is not None else None
    generalisation = held_out_result(run_dir)
    figures = metrics.to_dict()
    if generalisation is not None:  # its own metric (eval --held-out-shapes): never part of a reward
        figures["held_out_shapes"] = generalisation["summary"]
    written: dict[str, Path] = {"metrics.json": _write(run_dir / "metrics.json",
                                                       json.dumps(figures, indent=2, sort_keys=True) + "\n")}
    kw = {"compare": other.records, "compare_label": other.label} if other else {}
    mkw = {"compare": other.metrics, "compare_label": other.label} if other else {}
    plot_dir = run_dir / "plots"
    made: dict[str, Path] = {}
    if plots.available():
        made = {
            "speedups": plots.plot_speedup_distributions(records, plot_dir / "speedups.png", **kw),
            "scatter": plots.plot_task_scatter(records, plot_dir / "scatter.png", **kw),
            "rates": plots.plot_rates(metrics, plot_dir / "rates.png", paper=paper.TABLE1["overall"], **mkw),
            "rewards": plots.plot_rewards(metrics, plot_dir / "rewards.png", **mkw),
            "fast_p": plots.plot_fast_p(metrics, plot_dir / "fast_p.png"),
        }
    written.update({f"plots/{name}.png": path for name, path in made.items()})
    title = title or f"cuda-agent eval: {run_dir.resolve().name}"
    sections = _sections(records, metrics, other, made)
    if generalisation is not None:
        sections.insert(-2, _held_out_section(generalisation))  # before the task table and the definitions
    written["report.md"] = _write(run_dir / "report.md", render_markdown(title, sections, run_dir))
    written["report.html"] = _write(run_dir / "report.html", render_html(title, sections))
    return written


def held_out_result(run_dir: Path) -> dict[str, Any] | None:
    """RUN/held_out.json (eval --held-out-shapes), or None where the run has none or it cannot be read."""
    try:
        data = json.loads((Path(run_dir) / HELD_OUT_RESULT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("summary"), dict) else None


def _held_out_section(result: dict[str, Any]) -> Section:
    s = result["summary"]
    rate = "n/a" if s.get("pass_rate") is None else f"{s['pass_rate']:.1%}"
    names = list(result.get("variants", {}))
    rows = []
    for kernel in result.get("kernels", []):
        cells = []
        for name in names:
            v = kernel.get("variants", {}).get(name)
            if v is None:
                cells.append("-")
                continue
            sizes = ", ".join(f"{k} {old}->{new}" for k, (old, new) in v.get("sizes", {}).items())
            cells.append(("ok" if v.get("passed") else f"{v.get('status')}: {v.get('reason', '')[:80]}") + f" ({sizes})")
        rows.append([kernel["task_id"], str(kernel["episode"]), *cells, "yes" if kernel.get("generalises") else "no"])
    text = [f"{s.get('generalise', 0)} of {s.get('kernels', 0)} correct kernels are correct on every held-out variant "
            f"of their task ({rate}); {s.get('without_variants', 0)} kernel(s) have no variant (their task's sizes "
            "also build the model, or get_inputs() reads no module-level size). Correctness only, no timing; it "
            "changes no reward. Variants: " + "; ".join(f"{k}: {v}" for k, v in result.get("variants", {}).items())]
    return Section("Held-out shapes", text=text, headers=["task", "episode", *names, "generalises"], rows=rows)


def _write(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


# ------------------------------------------------------------------------------------------- content


def fmt(metric: Metric, column: str) -> str:
    """A metric with its 95% interval: 97.5% (93.0, 100.0) for rates, 2.11x (1.90, 2.35) for geomeans."""
    if metric.value is None:
        return "n/a" if metric.unmeasured else "-"
    if column.startswith("geomean"):
        text, ci = f"{metric.value:.2f}x", "({:.2f}, {:.2f})"
    elif column == "mean_reward":
        text, ci = f"{metric.value:.2f}", "({:.2f}, {:.2f})"
    else:
        text, ci = f"{100 * metric.value:.1f}%", "({:.1f}, {:.1f})"
        if metric.low is not None:
            return f"{text} {ci.format(100 * metric.low, 100 * metric.high)}"
        return text
    return f"{text} {ci.format(metric.low, metric.high)}" if metric.low is not None else text


def _paper_cell(value: float | None, column: str) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" if column.startswith("geomean") else f"{100 * value:.1f}%"


def _row_label(key: str) -> str:
    return "overall" if key == "overall" else f"Level {key}"


def _keys(metrics: RunMetrics) -> list[str]:
    return [str(lv) for lv in metrics.levels] + ["overall"]


def _table(metrics: RunMetrics, selection: str, columns: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    headers = ["", "tasks", "episodes", *[SHORT[c] for c in columns]]
    rows = []
    for key in _keys(metrics):
        row = metrics.tables[selection][key]
        tasks = f"{row.tasks}" + (f" ({row.missing} missing)" if row.missing else "")
        rows.append([_row_label(key), tasks, str(row.episodes), *[fmt(row.metrics[c], c) for c in columns]])
    return headers, rows


def compile_label(modes: dict[str, int]) -> str:
    """The compile baseline as the report names it: torch.compile and its mode (metrics.compile_modes), or
    every mode where a run mixed them; plain "torch.compile" where nothing was timed."""
    if not modes:
        return "torch.compile"
    return f"torch.compile ({', '.join(modes)})" if len(modes) == 1 else f"torch.compile (mixed: {', '.join(modes)})"


def _baseline_lines(metrics: RunMetrics) -> list[str]:
    """Which torch.compile mode every 'vs compile' figure is against (issue 29: users compare against
    'default' and 'max-autotune-no-cudagraphs', and the figures differ)."""
    modes = metrics.compile_modes
    if len(modes) == 1:
        (mode, count), = modes.items()
        return [f"Compile baseline: torch.compile in mode {mode} ({count} timed episode(s)); every 'vs compile' "
                "figure is against it."]  # fmt: skip
    if modes:
        each = ", ".join(f"{mode} ({count})" for mode, count in modes.items())
        return [f"Compile baselines MIXED: torch.compile modes {each} timed episodes; 'vs compile' figures "
                "compare against different baselines (judge each mode as its own run: --compile-mode)."]  # fmt: skip
    return []


def _fast_p(metrics: RunMetrics, selection: str = "pass@1") -> Section:
    """KernelBench's fast_p sweep per level and baseline, for all kernels and for those at precision parity."""
    headers = ["", "baseline", "kernels", *[f"fast_{p:g}" for p in FAST_P]]
    compiled = compile_label(metrics.compile_modes)
    rows = []
    for key in _keys(metrics):
        row = metrics.tables[selection][key]
        for baseline in BASELINES:
            for parity, which in ((False, "all"), (True, "precision parity")):
                cells = [row.metrics.get(fast_column(p, baseline, parity)) for p in FAST_P]
                rows.append([_row_label(key), "eager" if baseline == "eager" else compiled, which,
                             *[fmt(c, "rate") if c is not None else "-" for c in cells]])  # fmt: skip
    return Section("fast_p (KernelBench)", headers=headers, rows=rows, text=[
        "fast_p: the share of tasks whose kernel is correct and whose median speedup over the baseline is "
        "greater than p (fast_0: the share correct), every task in the denominator, as KernelBench reports it.",
        "'precision parity' counts only kernels whose precision-audit ratio (their error in units of what an "
        "honest kernel in the task's precision can be off by) is within the bound k they were judged "
        "against: a speedup bought with TF32 or half-precision math inside an fp32 task does not count there. "
        "A kernel without a measured ratio is not counted at parity."])  # fmt: skip


def _summary(records: Sequence[EvalRecord], metrics: RunMetrics) -> list[str]:
    overall = metrics.row("overall")
    weights = ", ".join(f"Level {lv}: {size}" for lv, size in sorted(metrics.level_sizes.items())) or "none"
    k = metrics.episodes_per_task
    lines = [
        f"{overall.tasks} tasks ({overall.missing} without a record), {len(records)} episodes, "
        f"{k['min']}-{k['max']} episodes per task.",
        f"Overall weights levels by task count ({weights}); it covers "
        f"{', '.join(f'Level {lv}' for lv in metrics.overall_levels) or 'no level'}.",
        f"Intervals: {100 * metrics.confidence:.0f}% percentile bootstrap over tasks within each level, "
        f"{metrics.bootstrap} replicates, seed {metrics.seed}. The reward's threshold: {metrics.threshold}.",
        *_baseline_lines(metrics),
        f"Generated {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}.",
    ]
    lines += unmeasured_lines(records)
    if metrics.unjudgeable:
        shown = ", ".join(metrics.unjudgeable[:12]) + (", ..." if len(metrics.unjudgeable) > 12 else "")
        lines.append(f"{len(metrics.unjudgeable)} task(s) left out of every table: the judge could not judge them "
                     f"(task_error in every episode: the task is broken, degenerate or too large): {shown}.")
    empty = [lv for lv in metrics.levels if lv not in metrics.overall_levels]
    if empty:
        lines.append(f"No tasks in {', '.join(f'Level {lv}' for lv in empty)}: its row is empty and overall leaves it out.")
    return lines


def unmeasured_lines(records: Sequence[EvalRecord]) -> list[str]:
    """Why some cells read n/a: how many episodes had each unmeasured status (metrics.UNMEASURED)."""
    lines = []
    for status, why in UNMEASURED.items():
        count = sum(r.status == status for r in records)
        if count:
            lines.append(f"{count} episode(s) were {why}: status {status}, neither correct nor failed, so the "
                         "rates, geomeans and mean reward of their rows are n/a.")
    return lines


def _side_by_side(metrics: RunMetrics, other: Run | None) -> Section:
    headers = ["", "source", *[SHORT[c] for c in HEADLINE]]
    rows = []
    for key in _keys(metrics):
        rows.append([_row_label(key), "this run", *[fmt(metrics.row(key).metrics[c], c) for c in HEADLINE]])
        if other is not None and key in other.metrics.tables["pass@1"]:
            theirs = other.metrics.row(key)
            rows.append([_row_label(key), other.label,
                         *[fmt(theirs.metrics[c], c) if theirs.tasks else "-" for c in HEADLINE]])
        cited = paper.TABLE1.get(key)
        if cited is not None:
            rows.append([_row_label(key), "paper", *[_paper_cell(cited.value_for(c), c) for c in HEADLINE]])
    sources = sorted({s for row in paper.TABLE1.values() for s in row.sources.values()})
    text = [paper.CAVEAT, f"Paper: {paper.PAPER}. Sources: {'; '.join(sources)}."]
    if other is not None:
        text.insert(0, f"Compared with run {other.label} ({len(other.records)} episodes; pass@1; compile "
                       f"baseline {compile_label(other.metrics.compile_modes)}).")  # fmt: skip
        if other.metrics.compile_modes and set(other.metrics.compile_modes) != set(metrics.compile_modes):
            text.insert(1, f"The runs' compile baselines differ ({compile_label(metrics.compile_modes)} here): "
                           "their 'vs compile' columns are not comparable.")  # fmt: skip
    return Section("Side by side", text=text, headers=headers, rows=rows)


def _task_rows(records: Sequence[EvalRecord]) -> list[list[str]]:
    by_task: dict[str, list[EvalRecord]] = {}
    for r in records:
        by_task.setdefault(r.task_id, []).append(r)
    rows = []
    for task_id in sorted(by_task, key=lambda t: (by_task[t][0].level, by_task[t][0].problem, t)):
        eps = by_task[task_id]
        best = best_record(eps)

        def num(value: float | None, unit: str = "", digits: int = 3) -> str:
            return "-" if value is None else f"{value:.{digits}g}{unit}"

        reason = best.reason if len(best.reason) <= REASON_CHARS else best.reason[:REASON_CHARS] + "..."
        rows.append([task_id, str(best.level), passed_count(eps), best.status, f"{best.reward:+d}",
                     num(best.speedup_vs_eager, "x"), num(best.speedup_vs_compile, "x"), num(best.candidate_ms),
                     num(best.eager_ms), num(best.compile_ms), precision_label(best),
                     "" if best.passed else reason])
    return rows


def _sections(records: Sequence[EvalRecord], metrics: RunMetrics, other: Run | None,
              made: dict[str, Path]) -> list[Section]:
    sections = [Section("Run", text=_summary(records, metrics))]
    compiled = compile_label(metrics.compile_modes)
    h, rows = _table(metrics, "pass@1", (*HEADLINE, "mean_reward"))
    sections.append(Section("Table 1 (pass@1)", headers=h, rows=rows, text=[
        "Rates count every task (a failure is never faster); geomeans over correct kernels, and over all "
        f"tasks with a failure counted as falling back to eager. 'compile' is {compiled}. Definitions at the end."]))
    h, rows = _table(metrics, "pass@1", THRESHOLD_COLUMNS)
    sections.append(Section("Faster than the reward's threshold", headers=h, rows=rows, text=[
        f"'median': the median speedup above {metrics.threshold}; 'credited': what the judge's reward "
        f"credited (the lower 95% bound above {metrics.threshold} widened by the baseline's measured spread)."]))
    if metrics.episodes_per_task["max"] > 1:
        h, rows = _table(metrics, "best_of_k", (*HEADLINE, "mean_reward"))
        sections.append(Section(f"Best of {metrics.episodes_per_task['max']} episodes", headers=h, rows=rows, text=[
            "Each task's best episode (correct, then reward, then speedup). The choice uses the judge's "
            "measurements, so it is optimistic by construction; pass@1 above is the single-attempt figure."]))
    sections.append(_fast_p(metrics))
    sections.append(_side_by_side(metrics, other))
    captions = {
        "speedups": f"Speedup distributions per level, vs eager and vs {compiled}",
        "scatter": f"Per-task speedup vs eager against speedup vs {compiled}",
        "rates": "Pass and faster-than rates with 95% intervals",
        "rewards": "Reward distribution",
        "fast_p": f"fast_p against eager and {compiled}, overall (with intervals), per level, and at precision parity",
    }
    sections.append(Section("Plots", images=[(captions[name], path) for name, path in made.items()], text=[] if made
                            else ["Plots not drawn: matplotlib is not installed (pip install 'cuda-agent[eval]')."]))
    rewards = [str(r) for r in (-1, 0, 1, 2, 3)]
    sections.append(Section("Rewards (episodes)", headers=["", *rewards, "total"], rows=[
        [_row_label(k), *[str(metrics.reward_counts[k].get(r, 0)) for r in rewards],
         str(sum(metrics.reward_counts[k].values()))] for k in _keys(metrics)]))
    statuses = sorted({s for counts in metrics.status_counts.values() for s in counts})
    sections.append(Section("Statuses (episodes)", headers=["", *statuses], rows=[
        [_row_label(k), *[str(metrics.status_counts[k].get(s, 0)) for s in statuses]] for k in _keys(metrics)]))
    sections.append(Section("Tasks (best episode)", rows=_task_rows(records), text=[
        f"'vs compile' and 'compile ms': against {compiled}."], headers=[
        "task", "level", "correct", "status", "reward", "vs eager", "vs compile", "ms", "eager ms",
        "compile ms", "precision (audit ratio)", "reason"]))
    sections.append(Section("Definitions", terms=[(SHORT[c], metrics.definitions.get(c, DEFINITIONS[c]))
                                                  for c in (*HEADLINE, *THRESHOLD_COLUMNS, "mean_reward")]))
    return sections


# ------------------------------------------------------------------------------------------ renderers


def md_escape(text: str) -> str:
    """A string safe in a Markdown table cell: no HTML tags or entities, no cell breaks, no links or
    code spans (quotes and '>' are harmless without '<' and stay readable)."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace("\r", " ").replace("\n", " ")
    for char, entity in (("|", "&#124;"), ("`", "&#96;"), ("[", "&#91;"), ("]", "&#93;"), ("\\", "&#92;")):
        text = text.replace(char, entity)
    return text


def render_markdown(title: str, sections: Sequence[Section], run_dir: Path) -> str:
    out = [f"# {md_escape(title)}", ""]
    for section in sections:
        out += [f"## {md_escape(section.title)}", ""]
        for line in section.text:
            out += [md_escape(line), ""]
        if section.headers:
            out.append("| " + " | ".join(md_escape(h) for h in section.headers) + " |")
            out.append("|" + "---|" * len(section.headers))
            out += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in section.rows]
            out.append("")
        for alt, path in section.images:
            out += [f"![{md_escape(alt)}]({Path(path).relative_to(run_dir).as_posix()})", ""]
        for term, text in section.terms:
            out.append(f"- **{md_escape(term)}**: {md_escape(text)}")
        if section.terms:
            out.append("")
    return "\n".join(out)


CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1400px;
       padding: 0 1em; color: #1b1b1b; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .6em 0; font-size: 13px; }
th, td { border: 1px solid #d0d0d0; padding: .25em .55em; text-align: right; vertical-align: top; }
td { white-space: nowrap; } div.scroll { overflow-x: auto; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; white-space: nowrap; }
tr:nth-child(even) td { background: #fafafa; }
td.text { text-align: left; max-width: 28em; overflow-wrap: anywhere; white-space: normal; }
figure { margin: 1em 0; } img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 12px; } dt { font-weight: 600; } dd { margin: 0 0 .5em 1.5em; }
p.note { color: #444; }
"""

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def render_html(title: str, sections: Sequence[Section]) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{e(title)}</title><style>{CSS}</style></head><body>", f"<h1>{e(title)}</h1>"]
    for section in sections:
        out.append(f"<section><h2>{e(section.title)}</h2>")
        out += [f'<p class="note">{e(line)}</p>' for line in section.text]
        if section.headers:
            text_columns = {i for i, h in enumerate(section.headers) if h in ("reason", "task")}
            out.append('<div class="scroll"><table><thead><tr>' + "".join(f"<th>{e(h)}</th>" for h in section.headers) + "</tr></thead><tbody>")
            for row in section.rows:
                cells = "".join(f'<td class="text">{e(c)}</td>' if i in text_columns else f"<td>{e(c)}</td>"
                                for i, c in enumerate(row))
                out.append(f"<tr>{cells}</tr>")
            out.append("</tbody></table></div>")
        for alt, path in section.images:
            data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
            out.append(f'<figure><img src="data:image/png;base64,{data}" alt="{e(alt)}">'
                       f"<figcaption>{e(alt)}</figcaption></figure>")
        if section.terms:
            out.append("<dl>" + "".join(f"<dt>{e(t)}</dt><dd>{e(d)}</dd>" for t, d in section.terms) + "</dl>")
        out.append("</section>")
    out.append("</body></html>\n")
    return "\n".join(out)
