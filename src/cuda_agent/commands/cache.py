"""`cuda-agent cache [show|prune|clear|warm]`: what the judge's build caches hold on disk, and keeping them small.

- `show` (the default): a table per cache (the judge's, the shared read-only one episodes read, and with
  `--runs DIR` each episode's private one) and kind (pch, object, baseline): entries, size, last use;
  `--json` prints the same as one JSON object.
- `prune --budget 20G`: remove least recently used entries of each cache beyond the budget (entries used
  in the last ten minutes stay: a build may be about to link them).
- `clear [--kind pch|object|baseline]`: remove every entry (of that kind).
- `warm`: build the judge's precompiled header and binding object into the shared cache (what `solve`
  does before its episodes), so that the first compile of every episode reuses them. The header in the
  default shared cache is a hard link of the judge's own (compiled there first when missing), not a
  second ~570 MB copy; `show` counts a hard-linked file once in its total.
Exit 0, or 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from cuda_agent.commands.render import table


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="show, prune, clear or warm the judge's build caches",
        description="Show and manage the judge's build caches (objects, precompiled headers, baselines).",
    )
    parser.add_argument("action", nargs="?", default="show", choices=["show", "prune", "clear", "warm"])
    parser.add_argument("--root", type=Path, action="append",
                        help="a cache root to act on (repeatable; default: the judge's and the shared one)")
    parser.add_argument("--runs", type=Path, help="also the episodes' private caches under this solve --runs-dir")
    parser.add_argument("--budget", help="prune: bytes each cache may keep, e.g. 20G (default $CUDA_AGENT_CACHE_BUDGET or 20G)")
    parser.add_argument("--kind", choices=["pch", "object", "baseline"], help="clear: only this kind of entry")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=run)  # fmt: skip


def _roots(args: argparse.Namespace) -> dict[str, Path]:
    from cuda_agent.judge import cache_root, default_shared_root, episode_caches

    if args.root:
        roots = {f"root:{r}": r for r in args.root}
    else:
        roots = {"judge": cache_root(), "shared": default_shared_root()}
    if args.runs:
        roots.update(episode_caches(args.runs))
    return roots


def run(args: argparse.Namespace) -> int:
    from cuda_agent.judge.trusted import cache

    if args.runs and not args.runs.is_dir():
        print(f"error: --runs {args.runs} is not a folder", file=sys.stderr)
        return 2
    try:
        budget = cache.parse_size(args.budget) if args.budget else cache.budget_from_env()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    roots = _roots(args)
    if args.action == "warm":
        return _warm(args, roots)
    if args.action in ("prune", "clear"):
        results = {}
        for name, root in roots.items():
            done = cache.clear(root, [args.kind] if args.kind else None) if args.action == "clear" else (
                cache.prune(root, budget))  # fmt: skip
            results[name] = {"root": str(root), "removed": done.removed, "freed_bytes": done.freed,
                             "kept_bytes": done.kept_bytes}  # fmt: skip
        if args.json:
            print(json.dumps({"action": args.action, "caches": results}, sort_keys=True))
        else:
            rows = [[n, r["root"], str(r["removed"]), cache.format_size(r["freed_bytes"]),
                     cache.format_size(r["kept_bytes"])] for n, r in results.items()]  # fmt: skip
            print(table(["cache", "root", "removed", "freed", "kept"], rows))
        return 0
    areas = cache.census(roots)
    if args.json:
        total = sum(a.bytes - a.linked for a in areas)  # a hard-linked file is on disk once
        print(json.dumps({"caches": [a.to_dict() for a in areas], "total_bytes": total}, sort_keys=True))
        return 0
    rows = [[a.name, a.kind, str(a.count), _size(a), _ago(a.newest), str(a.root)]
            for a in areas if a.count or not args.runs]  # fmt: skip
    print(table(["cache", "kind", "entries", "size", "last used", "root"], rows))
    print(f"\ntotal {cache.format_size(sum(a.bytes - a.linked for a in areas))} on disk; budget per cache "
          f"{cache.format_size(budget)} (prune with `cuda-agent cache prune --budget SIZE`)")  # fmt: skip
    return 0


def _warm(args: argparse.Namespace, roots: dict[str, Path]) -> int:
    from cuda_agent.judge import ToolchainError, default_shared_root, warm_shared

    target = args.root[0] if args.root else default_shared_root()
    print(f"warming {target} (the first time this compiles the precompiled header: about a minute)",
          file=sys.stderr)  # fmt: skip
    try:
        warmed = warm_shared(target)
    except ToolchainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    record = {"root": str(warmed.root), "ok": warmed.ok, "pch": warmed.pch, "seconds": round(warmed.seconds, 2),
              "compiled": list(warmed.compiled), "message": warmed.message}  # fmt: skip
    if args.json:
        print(json.dumps(record, sort_keys=True))
    else:
        state = "ready" if warmed.ok and warmed.pch else "NOT usable"
        print(f"shared cache {state}: {warmed.root} in {warmed.seconds:.1f} s "
              f"({len(warmed.compiled)} compiled){': ' + warmed.message if warmed.message else ''}")  # fmt: skip
    return 0 if warmed.ok else 1


def _size(area: Any) -> str:
    """An area's size, saying how much of it is a hard link of a file shown above (not on disk again)."""
    from cuda_agent.judge.trusted import cache

    shown = cache.format_size(area.bytes)
    if not area.linked:
        return shown
    return f"{shown} (hard links to the above)" if area.linked == area.bytes else (
        f"{shown} ({cache.format_size(area.linked)} hard links to the above)")  # fmt: skip


def _ago(when: float | None) -> str:
    if when is None:
        return "-"
    seconds = max(0.0, time.time() - when)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"
