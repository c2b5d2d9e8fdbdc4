"""Shared, read-only build caches across episodes, LRU pruning, and `cuda-agent cache` (issue 14, item 1).

Real g++/nvcc builds against a session-wide shared root (`warm_root`): an episode's build takes the judge's
PCH and binding object from it in place, writes only its own objects to its private cache, and never
changes the shared root."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from cuda_agent.cli import main
from cuda_agent.judge.trusted import cache
from cuda_agent.judge.trusted.build import BuildConfig, build_extension

SMALL_BINDING = """
#include "../binding_registry.h"
static int answer() { return 42; }
static void register_small(pybind11::module& m) { m.def("answer", &answer); }
REGISTER_BINDING(small, register_small);
"""


def _snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, stat.S_IMODE(p.stat().st_mode))
            for p in sorted(root.rglob("*")) if p.name != ".lock"}  # fmt: skip


def _bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


@pytest.mark.slow
def test_episodes_read_the_shared_pch_in_place_and_add_only_their_objects(warm_root: Path, tmp_path: Path) -> None:
    shared_objects = warm_root / "objects"
    gch = next(shared_objects.glob("pch/*/torch_binding_pch.h.gch"))
    assert gch.stat().st_size > 100 << 20  # the thing worth sharing
    # Sealed: entries read-only, folders never group/world-writable.
    assert not stat.S_IMODE(gch.stat().st_mode) & 0o222
    assert all(not stat.S_IMODE(p.stat().st_mode) & 0o022 for p in [warm_root, *warm_root.rglob("*")])
    before = _snapshot(warm_root)
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "small_binding.cpp").write_text(SMALL_BINDING)
    for episode in ("a",):  # (a second episode would do the same: nothing of "a" is in the shared root)
        private = tmp_path / episode / "objects"
        # As utils/compile.sh builds in an episode (the final judgment compiles its own binding.cpp).
        config = BuildConfig(arch="9.0", cache_dir=private, read_only_caches=(shared_objects,),
                             private_judge_binding=False)  # fmt: skip
        result = build_extension(kernels, tmp_path / episode / "out", config)
        assert result.ok, result.full_log
        # The first compile of the episode reused the shared header and the judge's own objects.
        assert result.pch and result.cached == ("binding.cpp", "judge_driver_gate.cpp")
        assert result.compiled == ("kernels/small_binding.cpp",)
        assert any(f"-include {gch.parent}/torch_binding_pch.h" in c for c in result.commands)
        assert not (private / "pch").exists()  # no PCH of its own
        assert _bytes(private.parent) < 2 << 20, _bytes(private.parent)  # only its own object
    assert _snapshot(warm_root) == before  # nothing written, touched or chmod-ed in the shared root


def test_a_build_without_a_shared_layer_keeps_its_own_cache_within_budget(tmp_path: Path) -> None:
    """Pruning: least recently used first, never what was used in the grace period, PCH folders whole."""
    root = tmp_path / "cache"
    objects = root / "objects"
    (objects / "pch" / "old").mkdir(parents=True)
    (objects / "pch" / "old" / "torch_binding_pch.h.gch").write_bytes(b"x" * 5000)
    now = time.time()
    for index in range(6):
        path = objects / f"{index:064x}.o"
        path.write_bytes(b"o" * 1000)
        os.utime(path, (now - 7200 + index * 600, now - 7200 + index * 600))
    recent = objects / ("f" * 64 + ".o")
    recent.write_bytes(b"r" * 1000)
    os.utime(objects / "pch" / "old" / "torch_binding_pch.h.gch", (now - 9000, now - 9000))
    done = cache.prune(root, budget=3500, grace_s=600)
    left = sorted(p.name for p in objects.glob("*.o"))
    assert not (objects / "pch" / "old").exists()  # the oldest entry, removed as one piece
    assert recent.name in left  # used within the grace period: kept even though over budget
    assert left == sorted([recent.name, f"{4:064x}.o", f"{5:064x}.o"])
    assert done.kept_bytes == _bytes(root) and done.kept_bytes <= 3500
    assert done.removed == 5 and done.freed == 5000 + 4 * 1000
    with pytest.raises(ValueError, match="bad size"):
        cache.parse_size("lots")
    assert cache.parse_size("1.5G") == 3 << 29 and cache.parse_size("500M") == 500 << 20


def test_cache_command_shows_prunes_and_clears(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "c"
    (root / "objects" / "pch" / "abc").mkdir(parents=True)
    (root / "objects" / "pch" / "abc" / "torch_binding_pch.h.gch").write_bytes(b"p" * 4096)
    (root / "objects" / ("a" * 64 + ".o")).write_bytes(b"o" * 100)
    (root / "baselines").mkdir()
    (root / "baselines" / "k.json").write_text("{}")
    runs = tmp_path / "runs"
    episode = runs / "task1" / "workspace" / ".cache" / "cuda-agent" / "objects"
    episode.mkdir(parents=True)
    (episode / ("b" * 64 + ".o")).write_bytes(b"e" * 300)

    assert main(["cache", "--root", str(root), "--runs", str(runs), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    by = {(c["name"], c["kind"]): c for c in shown["caches"]}
    assert by[(f"root:{root}", "pch")]["bytes"] == 4096 and by[(f"root:{root}", "object")]["count"] == 1
    assert by[("episode:task1", "object")]["bytes"] == 300
    assert shown["total_bytes"] == 4096 + 100 + 2 + 300
    assert main(["cache", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "entries" in out and "4.0 KiB" in out and "total" in out

    assert main(["cache", "clear", "--kind", "pch", "--root", str(root), "--json"]) == 0
    cleared = json.loads(capsys.readouterr().out)["caches"][f"root:{root}"]
    assert cleared["removed"] == 1 and cleared["freed_bytes"] == 4096
    assert not (root / "objects" / "pch" / "abc").exists() and (root / "baselines" / "k.json").exists()
    assert main(["cache", "prune", "--budget", "lots", "--root", str(root)]) == 2
    assert "bad size" in capsys.readouterr().err
    assert main(["cache", "clear", "--root", str(root)]) == 0
    assert cache.entries(root) == []


def test_an_episode_reads_its_seed_in_place_and_copies_only_the_baselines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`solve --cache-seed`: the seed's objects and PCH are not copied into each episode (as they were)."""
    seed = tmp_path / "seed"
    (seed / "objects" / "pch" / "x").mkdir(parents=True)
    (seed / "objects" / "pch" / "x" / "torch_binding_pch.h.gch").write_bytes(b"p" * (1 << 20))
    (seed / "baselines").mkdir()
    (seed / "baselines" / "b.json").write_text('{"eager": 1}')
    workspace = tmp_path / "ws"
    private = workspace / ".cache" / "cuda-agent"
    env = cache.prepare_episode_cache(private, workspace, seed)
    assert env == {cache.SHARED_ENV: str(seed.resolve())}
    assert (private / "baselines" / "b.json").read_text() == '{"eager": 1}'
    assert _bytes(workspace) < 100  # the megabyte stayed in the seed
    with pytest.raises(ValueError, match="inside the workspace"):
        cache.prepare_episode_cache(private, workspace, workspace / "my-seed")
    # The build inside the episode finds the layer through the environment.
    monkeypatch.setenv(cache.SHARED_ENV, env[cache.SHARED_ENV])
    assert cache.shared_caches_from_env() == (seed.resolve() / "objects",)
    # ... but the judge's own builds never read a shared layer, whatever the environment says.
    assert BuildConfig().read_only_caches == () and BuildConfig().private_judge_binding


@pytest.mark.slow
def test_warm_links_the_judges_pch_instead_of_copying_it(
    warm_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cuda-agent cache warm` (issue 32, item 7): the default shared root's ~570 MB header is the judge's
    own file, hard linked, and `cuda-agent cache` counts it once. (The judge's PCH here is the session's
    warm root's, linked in: only the small binding units compile, against the header the warm found.)"""
    judge = tmp_path / "cache"
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(judge))
    source = next(warm_root.glob("objects/pch/*/torch_binding_pch.h.gch")).parent
    (judge / "objects" / "pch" / source.name).mkdir(parents=True)
    for item in source.iterdir():
        if item.name != ".lock":
            os.link(item, judge / "objects" / "pch" / source.name / item.name)
    (judge / "shared" / "objects").mkdir(parents=True)
    for obj in (warm_root / "objects").glob("*.o"):
        (judge / "shared" / "objects" / obj.name).write_bytes(obj.read_bytes())

    assert main(["cache", "warm", "--json"]) == 0
    warmed = json.loads(capsys.readouterr().out)
    assert warmed["ok"] and warmed["pch"], warmed
    judges = judge / "objects" / "pch" / source.name / "torch_binding_pch.h.gch"
    shared = judge / "shared" / "objects" / "pch" / source.name / "torch_binding_pch.h.gch"
    assert shared.samefile(judges)  # one file on disk, not a second ~570 MB copy
    assert not stat.S_IMODE(shared.stat().st_mode) & 0o222  # sealed as before

    assert main(["cache", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    by = {(c["name"], c["kind"]): c for c in shown["caches"]}
    assert by[("shared", "pch")]["linked_bytes"] == by[("shared", "pch")]["bytes"] > 100 << 20
    assert by[("judge", "pch")]["linked_bytes"] == 0
    assert shown["total_bytes"] < by[("judge", "pch")]["bytes"] + (5 << 20)  # the header counted once
    assert main(["cache"]) == 0
    assert "hard links to the above" in capsys.readouterr().out
