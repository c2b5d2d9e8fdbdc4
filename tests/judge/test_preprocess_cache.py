"""The preprocessor cache (trusted/preprocess.py): a warm judgment re-runs g++ -E only on units whose inputs
changed, and never serves a stale result that would hide a forbidden call moved into a header."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.judge.trusted import preprocess
from cuda_agent.judge.trusted.static_checks import check_kernel_sources


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the units the real preprocessor ran on (cache empty at the start)."""
    seen: list[str] = []
    real = preprocess.run_limited

    def counting(command, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(Path(command[2]).name)
        return real(command, **kwargs)

    monkeypatch.setattr(preprocess, "run_limited", counting)
    monkeypatch.setattr(preprocess, "_cache", type(preprocess._cache)())
    return seen


def _submission(root: Path) -> Path:
    kernels = root / "kernels"
    kernels.mkdir(parents=True)
    (kernels / "helper.h").write_text("inline int twice(int x) { return 2 * x; }\n")
    (kernels / "a_binding.cpp").write_text('#include "helper.h"\nint a() { return twice(1); }\n')
    (kernels / "other.cpp").write_text("int other() { return 1; }\n")
    return kernels


def test_a_change_to_one_unit_reruns_that_unit_alone(tmp_path: Path, runs: list[str]) -> None:
    kernels = _submission(tmp_path / "one")
    assert check_kernel_sources(kernels) == []
    assert sorted(runs) == ["a_binding.cpp", "other.cpp"]
    # The next submission (a fresh folder, as every judgment stages one) changes other.cpp only.
    second = _submission(tmp_path / "two")
    (second / "other.cpp").write_text("int other() { return 2; }  // changed\n")
    runs.clear()
    assert check_kernel_sources(second) == []
    assert runs == ["other.cpp"]


def test_a_changed_header_reruns_the_units_that_include_it(tmp_path: Path, runs: list[str]) -> None:
    assert check_kernel_sources(_submission(tmp_path / "one")) == []
    second = _submission(tmp_path / "two")
    (second / "helper.h").write_text('#include <cstdlib>\ninline int twice(int x) { return std::system("x") + x; }\n')
    runs.clear()
    findings = check_kernel_sources(second)
    assert runs == ["a_binding.cpp"]  # other.cpp does not include helper.h: its cached result stands
    assert any("a_binding.cpp" in str(f) or "helper.h" in str(f) for f in findings), [str(f) for f in findings]


def test_a_new_file_reruns_units_that_could_see_it(tmp_path: Path, runs: list[str]) -> None:
    """`__has_include` depends on which files exist, so a new file is a new key for every unit."""
    source = '#if __has_include("extra.h")\n#include "extra.h"\n#endif\nint a() { return 1; }\n'
    first = _submission(tmp_path / "one")
    (first / "a_binding.cpp").write_text(source)
    assert check_kernel_sources(first) == []
    second = _submission(tmp_path / "two")
    (second / "a_binding.cpp").write_text(source)
    (second / "extra.h").write_text('#include <unistd.h>\ninline int e() { return execvp("sh", nullptr); }\n')
    runs.clear()
    findings = check_kernel_sources(second)
    assert "a_binding.cpp" in runs
    assert findings, "the forbidden call in the newly visible header must be found"


def test_dependencies_come_from_the_line_markers(tmp_path: Path) -> None:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "x.h").write_text("int x;\n")
    text = (f'# 1 "{tmp_path}/kernels/a.cpp"\n# 1 "<built-in>"\n# 1 "/usr/include/stdio.h" 1 3\n'
            f'# 1 "{tmp_path}/kernels/../kernels/x.h" 1\nint x;\n')  # fmt: skip
    deps = dict(preprocess.stage_dependencies(text, tmp_path))
    assert set(deps) == {"kernels/a.cpp", "kernels/x.h"}
    assert deps["kernels/a.cpp"] is None  # not on disk: a result with it is never reused
    assert deps["kernels/x.h"] is not None
