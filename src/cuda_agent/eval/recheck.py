"""`cuda-agent eval --recheck RUN/`: judge a run's final submissions again and say what changed.

Every record whose submission is in the bundle (RUN/submissions/<task>/ep<k>) is judged again as one
batch; per (task, episode) the status, the reward and both speedups are compared with the verdict the
run kept. Timing moves between runs, so a speedup difference is judged against the noise the two
verdicts measured themselves: the relative interquartile ranges of the candidate's and the baseline's
times in both (half their sum, at least 3%). Status and reward are exact. The comparison is written to
RUN/recheck.json and the new verdicts to RUN/recheck/verdicts/. Submissions are judged one at a time
(`--batch`: as one pipelined batch), each holding its GPU alone, so nothing runs beside their timings.
A judge that cannot run here (no GPU, an unreachable server) stops the recheck at its first judgment
with `JudgeUnavailableHere`, before anything is written: a recheck of nothing would overwrite a real one.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cuda_agent.agent.judging import UNAVAILABLE
from cuda_agent.eval import bundle
from cuda_agent.eval.judges import Backend, Item, leased
from cuda_agent.eval.kernelbench import slug_of
from cuda_agent.eval.records import EvalRecord, read_records
from cuda_agent.task import TaskError, load_task

MIN_NOISE = 0.03


class JudgeUnavailableHere(Exception):
    """The judge cannot run on this machine (no GPU, no server): nothing can be rechecked."""


def _rel_iqr(stat: dict[str, Any] | None) -> float:
    if not stat or not stat.get("median"):
        return 0.0
    return max(0.0, (float(stat["p75"]) - float(stat["p25"])) / float(stat["median"]))


def noise_bound(old: dict[str, Any] | None, new: dict[str, Any] | None, baseline: str) -> float:
    """The relative speedup change the two verdicts' own spreads allow (candidate and `baseline`)."""
    spread = 0.0
    for timing in (old or {}, new or {}):
        spread += _rel_iqr(timing.get("candidate")) + _rel_iqr(timing.get(baseline))
    return max(MIN_NOISE, spread / 2)


def compare(record: EvalRecord, old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """One row of the recheck: before and after, and whether they agree."""
    old_timing = (old or {}).get("timing") or {}
    new_timing = new.get("timing") or {}
    row: dict[str, Any] = {
        "task_id": record.task_id, "episode": record.episode,
        "status": [record.status, new["status"]], "reward": [record.reward, new["reward"]],
        "same_status": record.status == new["status"], "same_reward": record.reward == new["reward"],
    }  # fmt: skip
    within = []
    for which, baseline in (("eager", "eager"), ("compile", "compile")):
        before = getattr(record, f"speedup_vs_{which}")
        after = new_timing.get(f"speedup_vs_{which}") if new["status"] == "ok" else None
        entry: dict[str, Any] = {"before": before, "after": after}
        if before and after:
            change = after / before - 1.0
            bound = noise_bound(old_timing, new_timing, baseline)
            entry.update(change=change, noise=bound, within_noise=abs(change) <= bound)
            within.append(abs(change) <= bound)
        row[f"speedup_vs_{which}"] = entry
    row["within_noise"] = all(within) if within else None
    row["agrees"] = row["same_status"] and row["same_reward"] and row["within_noise"] is not False
    return row


def judged(backend: Backend, items: list[Item], batch: bool) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, outcome) of every item, each judgment holding its GPU alone (judges.leased).

    One at a time unless `batch`: in a pipelined batch the next submissions' builds run on the CPU while
    one is timed, and on the H200 that charged up to half of a small kernel's rounds by the host clock
    (Softmax 1.49x with a lower bound of 0.62, a GEMM 0.85x against 1.00x alone). A recheck exists to
    measure again under the quietest conditions, so by default nothing runs beside its timings."""
    judge = leased(backend)
    if batch:
        yield from judge.judge_many(items)
        return
    for index, item in enumerate(items):
        yield index, judge.judge(*item)


def recheck(run_dir: Path, backend: Backend, say: Callable[[str], None], *, batch: bool = False) -> dict[str, Any]:
    """Re-judge the bundle's submissions (one at a time unless `batch`); returns (and writes to
    RUN/recheck.json) the comparison."""
    run_dir = Path(run_dir)
    records = read_records(run_dir / "records.jsonl")
    if not records:
        raise ValueError(f"{run_dir / 'records.jsonl'} holds no records: nothing to recheck")
    nonce = secrets.token_hex(6)  # a recheck judges anew: its keys are its own
    items, kept, missing = [], [], []
    for record in records:
        slug = slug_of(record.level, record.problem, record.name)
        folder = run_dir / bundle.episode_dir("submissions", slug, record.episode)
        if not (folder / "model.py").is_file():
            missing.append({"task_id": record.task_id, "episode": record.episode,
                            "reason": f"no submission in the bundle ({folder.relative_to(run_dir)})"})  # fmt: skip
            continue
        try:
            task = load_task(folder / "model.py", name=slug)
        except TaskError as exc:
            missing.append({"task_id": record.task_id, "episode": record.episode, "reason": str(exc)})
            continue
        items.append((folder, task, f"recheck-{nonce}-{slug}-ep{record.episode}"[:120]))
        kept.append(record)
    say(f"rechecking {len(items)} submission(s) of {run_dir} (judge: {backend.name}, "
        f"{'one pipelined batch' if batch else 'one at a time'}); {len(missing)} without a submission")  # fmt: skip
    rows: dict[int, dict[str, Any]] = {}
    start = time.monotonic()
    for index, outcome in judged(backend, items, batch) if items else ():
        if outcome.get("status") == UNAVAILABLE:
            raise JudgeUnavailableHere(outcome.get("reason") or "no GPU")
        record = kept[index]
        slug = slug_of(record.level, record.problem, record.name)
        if outcome.get("verdict") is None:
            rows[index] = {"task_id": record.task_id, "episode": record.episode, "status": [record.status,
                           outcome["status"]], "agrees": False, "reason": outcome.get("reason", "")}  # fmt: skip
        else:
            bundle.write_json(run_dir / "recheck" / bundle.episode_dir("verdicts", slug, record.episode), outcome)
            old = None
            if record.verdict_path and (run_dir / record.verdict_path).is_file():
                old = bundle.read_json(run_dir / record.verdict_path).get("verdict")
            rows[index] = compare(record, old, outcome["verdict"])
        say(f"[{len(rows)}/{len(items)}] {record.task_id}#{record.episode}: {record.status} -> {outcome['status']}")
    entries = [rows[i] for i in sorted(rows)]
    timed = [r for r in entries if r.get("within_noise") is not None]
    summary = {
        "rechecked": len(entries), "missing": len(missing),
        "same_status": sum(1 for r in entries if r.get("same_status")),
        "same_reward": sum(1 for r in entries if r.get("same_reward")),
        "timed": len(timed), "within_noise": sum(1 for r in timed if r["within_noise"]),
        "agree": sum(1 for r in entries if r.get("agrees")), "seconds": round(time.monotonic() - start, 1),
    }  # fmt: skip
    result = {"run": str(run_dir), "backend": backend.name, "finished": time.time(), "summary": summary,
              "judged": "one pipelined batch" if batch else "one at a time",
              "entries": entries, "missing": missing,
              "noise_rule": f"a speedup agrees when it moved by at most half the sum of the relative IQRs of "
                            f"the candidate and the baseline in both verdicts (at least {MIN_NOISE:.0%})"}  # fmt: skip
    bundle.write_json(run_dir / "recheck.json", result)
    return result


def recheck_table(result: dict[str, Any]) -> str:
    headers = ("task", "ep", "status", "reward", "vs eager", "vs compile", "agrees")
    rows = [headers]
    for r in result["entries"]:
        status = r["status"][0] if r["status"][0] == r["status"][1] else f"{r['status'][0]} -> {r['status'][1]}"
        reward = r.get("reward") or [None, None]
        before, after = _reward(reward[0]), _reward(reward[1])
        reward_text = before if reward[0] == reward[1] else f"{before} -> {after}"
        rows.append((r["task_id"], str(r["episode"]), status, reward_text, _speedup(r.get("speedup_vs_eager")),
                     _speedup(r.get("speedup_vs_compile")), "yes" if r.get("agrees") else "NO"))  # fmt: skip
    for m in result.get("missing", []):
        rows.append((m["task_id"], str(m["episode"]), "not rechecked", "-", "-", "-", m["reason"][:40]))
    widths = [max(len(row[i]) for row in rows) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    s = result["summary"]
    lines.append(f"{s['agree']}/{s['rechecked']} agree: status {s['same_status']}/{s['rechecked']}, reward "
                 f"{s['same_reward']}/{s['rechecked']}, speedups within noise {s['within_noise']}/{s['timed']} "
                 f"({result['noise_rule']})")  # fmt: skip
    return "\n".join(lines)


def _reward(value: Any) -> str:
    """A reward as +N; `-` where no verdict gave one (a judge error has none)."""
    if value is None:
        return "-"
    return f"{value:+d}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _speedup(entry: dict[str, Any] | None) -> str:
    if not entry or (entry.get("before") is None and entry.get("after") is None):
        return "-"
    before, after = entry.get("before"), entry.get("after")
    text = f"{_x(before)} -> {_x(after)}"
    if "change" in entry and not math.isnan(entry["change"]):
        text += f" ({entry['change']:+.1%}, noise {entry['noise']:.0%})"
    return text


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"
