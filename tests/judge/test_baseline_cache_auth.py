"""Baseline records are authenticated (baselines.py, authkey.py): forged, edited or replayed records are
ignored, and the key lives where a candidate cannot read it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cuda_agent.judge.trusted import authkey
from cuda_agent.judge.trusted.baselines import BaselineCache, BaselineRecord, cache_key

KEY = b"k" * 32


def _record(ms: float = 1.0) -> BaselineRecord:
    return BaselineRecord(eager_samples=[ms] * 30, compile_samples=[ms] * 30, eager_rounds=[ms] * 3,
                          compile_rounds=[ms] * 3, overhead_ms=0.01, compile_builds_ms=[ms, ms * 1.01],
                          eager_spread=0.01, compile_spread=0.02)  # fmt: skip


def test_signed_record_round_trips(tmp_path: Path) -> None:
    cache = BaselineCache(tmp_path, secret=KEY)
    key = cache_key("task", "env")
    cache.put(key, _record())
    assert cache.get(key) == _record()
    assert cache.rejected == 0


def test_forged_unsigned_record_is_ignored(tmp_path: Path) -> None:
    """The old record format (what 15_poison_baseline_cache writes) carries no valid MAC."""
    key = cache_key("task", "env")
    (tmp_path / f"{key}.json").write_text(json.dumps(_record(50.0).__dict__))
    cache = BaselineCache(tmp_path, secret=KEY)
    assert cache.get(key) is None
    assert cache.rejected == 1


def test_record_signed_with_another_key_is_ignored(tmp_path: Path) -> None:
    key = cache_key("task", "env")
    BaselineCache(tmp_path, secret=b"x" * 32).put(key, _record(50.0))  # the candidate's own key
    assert BaselineCache(tmp_path, secret=KEY).get(key) is None


def test_edited_record_is_ignored(tmp_path: Path) -> None:
    cache = BaselineCache(tmp_path, secret=KEY)
    key = cache_key("task", "env")
    cache.put(key, _record(1.0))
    path = tmp_path / f"{key}.json"
    data = json.loads(path.read_text())
    data["record"]["eager_rounds"] = [50.0, 50.0, 50.0]
    path.write_text(json.dumps(data))
    assert cache.get(key) is None


def test_record_copied_to_another_key_is_ignored(tmp_path: Path) -> None:
    """A genuine record of a slow task replayed under a fast task's key does not verify."""
    cache = BaselineCache(tmp_path, secret=KEY)
    slow, fast = cache_key("slow-task", "env"), cache_key("fast-task", "env")
    cache.put(slow, _record(50.0))
    (tmp_path / f"{fast}.json").write_text((tmp_path / f"{slow}.json").read_text())
    assert cache.get(fast) is None
    assert cache.get(slow) == _record(50.0)


def test_garbage_and_huge_records_are_ignored(tmp_path: Path) -> None:
    cache = BaselineCache(tmp_path, secret=KEY)
    key = cache_key("task", "env")
    for content in ("not json", "[1, 2]", json.dumps({"record": [], "mac": 1}), "x" * (5 << 20)):
        (tmp_path / f"{key}.json").write_text(content)
        assert cache.get(key) is None


def test_short_secret_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        BaselineCache(tmp_path, secret=b"short")


def test_machine_key_is_private_and_stable(tmp_path: Path) -> None:
    folder = tmp_path / "private"
    first = authkey.machine_key(folder)
    assert len(first) == authkey.KEY_BYTES and authkey.machine_key(folder) == first
    info = (folder / "cache-hmac.key").stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_machine_key_with_wide_permissions_is_replaced(tmp_path: Path) -> None:
    """A key file someone else could have read (or planted) is never trusted."""
    folder = tmp_path / "private"
    first = authkey.machine_key(folder)
    (folder / "cache-hmac.key").chmod(0o644)
    second = authkey.machine_key(folder)
    assert second != first
    assert stat.S_IMODE((folder / "cache-hmac.key").stat().st_mode) == 0o600


def test_planted_key_of_wrong_size_is_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    planted = folder / "cache-hmac.key"
    planted.write_bytes(b"0" * 8)
    planted.chmod(0o600)
    assert authkey.machine_key(folder) != b"0" * 8


def test_process_key_is_not_in_the_environment_and_memory_is_closed(tmp_path: Path) -> None:
    """The process key never reaches a child's environment, and the judge becomes non-dumpable, so a
    process of the same user cannot read its memory through /proc/PID/mem."""
    code = (
        "import os, sys, subprocess\n"
        "from cuda_agent.judge.trusted import authkey\n"
        "key = authkey.process_key()\n"
        "child = subprocess.run([sys.executable, '-c', 'import os,sys; print(open(f\"/proc/{os.getppid()}/status\").read())'],"
        " capture_output=True, text=True, env={**os.environ})\n"
        "assert key.hex() not in str(os.environ) and key.hex() not in child.stdout\n"
        "import ctypes; print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))\n"  # PR_GET_DUMPABLE
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "0"  # not dumpable


def test_key_mode_follows_the_sandbox() -> None:
    assert authkey.key_mode(candidate_separate_user=True) == "machine"
    assert authkey.key_mode(candidate_separate_user=False) == "process"


def test_a_baseline_of_fewer_compile_builds_has_a_name_of_its_own(tmp_path: Path) -> None:
    """`--compile-builds 1` (gpu_suite's quick runs) must not leave a one-build baseline where a judgment
    of the default three would read it; the default keeps the names records had before the option."""
    default = cache_key("task", "env")
    assert cache_key("task", "env", compile_builds=None) == default
    one, two = cache_key("task", "env", compile_builds=1), cache_key("task", "env", compile_builds=2)
    assert len({default, one, two}) == 3
    cache = BaselineCache(tmp_path, secret=KEY)
    cache.put(one, _record())
    assert cache.get(default) is None and cache.get(one) == _record()


def test_the_judge_command_sets_the_compile_builds_and_refuses_zero() -> None:
    import subprocess
    import sys

    from cuda_agent.cli import build_parser
    from cuda_agent.commands.judge import judge_config
    from cuda_agent.judge import BuildConfig
    from cuda_agent.judge.config import DEFAULT_COMPILE_BUILDS

    parse = build_parser().parse_args
    assert judge_config(parse(["judge", "sub"]), BuildConfig()).timing.compile_builds == DEFAULT_COMPILE_BUILDS
    assert judge_config(parse(["judge", "--compile-builds", "1", "sub"]), BuildConfig()).timing.compile_builds == 1
    done = subprocess.run([sys.executable, "-m", "cuda_agent.cli", "judge", "--compile-builds", "0", "sub"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "at least 1" in done.stderr.strip().splitlines()[-1], done.stderr
