"""The torch.compile mode of the compile baseline (issue 29, item 6; trusted/compile_modes.py).

A judge option (`TimingConfig.compile_mode`: "default" or "max-autotune-no-cudagraphs"; modes with CUDA
graphs refused in one line), handed to the reference worker's torch.compile builds, part of the baseline
cache's key (a baseline measured under one mode is never served for another) and named in every verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_timing_stage import Candidate, Reference, _judgment

from cuda_agent.judge.candidate import kernel_trace
from cuda_agent.judge.config import TimingConfig
from cuda_agent.judge.trusted import compile_modes
from cuda_agent.judge.trusted.baselines import BaselineCache, BaselineRecord, cache_key
from cuda_agent.judge.trusted.compile_modes import (
    COMPILE_MODES,
    REFUSED,
    CompileModeError,
    check_compile_mode,
)

pytestmark = pytest.mark.usefixtures("candidate_holds_nothing")  # conftest.py: the memory check at rest passes

AUTOTUNE = "max-autotune-no-cudagraphs"
KEY = b"k" * 32


# ---- the option ------------------------------------------------------------------------------------------


def test_the_default_mode_is_torch_compiles_default_and_the_autotuned_one_is_accepted() -> None:
    assert TimingConfig().compile_mode == "default"
    assert TimingConfig(compile_mode=AUTOTUNE).compile_mode == AUTOTUNE
    assert set(COMPILE_MODES) == {"default", AUTOTUNE}


@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune", "lite"])
def test_modes_the_baseline_is_not_built_with_are_refused_with_their_reason(mode: str) -> None:
    with pytest.raises(CompileModeError) as refused:
        TimingConfig(compile_mode=mode)
    message = str(refused.value)
    assert "\n" not in message and REFUSED[mode] in message and AUTOTUNE in message


def test_an_unknown_mode_is_refused_in_one_line_naming_the_choices() -> None:
    with pytest.raises(ValueError, match=r"^unknown torch.compile mode 'fastest' \(choose 'default', "
                       r"'max-autotune-no-cudagraphs'\)$"):  # fmt: skip
        TimingConfig(compile_mode="fastest")


def test_every_mode_the_installed_torch_knows_is_classified_and_cuda_graph_modes_are_refused() -> None:
    """A torch that adds a mode makes this fail until the table says whether the baseline may use it."""
    inductor = pytest.importorskip("torch._inductor")
    known = inductor.list_mode_options()
    assert set(COMPILE_MODES) <= set(known), "a mode the judge offers is not one torch.compile accepts"
    assert set(known) <= set(COMPILE_MODES) | set(REFUSED), (
        f"unclassified modes: {set(known) - set(COMPILE_MODES) - set(REFUSED)}"
    )
    for mode, options in known.items():
        if options.get("triton.cudagraphs"):
            assert mode in REFUSED, f"{mode} replays CUDA graphs"


# ---- the baseline cache ------------------------------------------------------------------------------------


def _record(ms: float) -> BaselineRecord:
    return BaselineRecord(eager_samples=[ms] * 30, compile_samples=[ms] * 30, eager_rounds=[ms] * 3,
                          compile_rounds=[ms] * 3, overhead_ms=0.01, compile_builds_ms=[ms])  # fmt: skip


def test_a_record_stored_under_the_default_mode_is_not_found_under_another(tmp_path: Path) -> None:
    cache = BaselineCache(tmp_path, secret=KEY)
    default, autotuned = cache_key("task", "env"), cache_key("task", "env", AUTOTUNE)
    assert default == cache_key("task", "env", "default") != autotuned
    cache.put(default, _record(1.0))
    assert cache.get(autotuned) is None
    assert cache.get(default) == _record(1.0)


def test_a_record_copied_to_another_modes_name_does_not_verify(tmp_path: Path) -> None:
    """The HMAC covers the key, and the key the mode: a default-mode record (slower baseline, larger
    speedups) renamed into the autotuned mode's place is refused, not served."""
    cache = BaselineCache(tmp_path, secret=KEY)
    default, autotuned = cache_key("task", "env"), cache_key("task", "env", AUTOTUNE)
    cache.put(default, _record(5.0))
    (tmp_path / f"{autotuned}.json").write_text((tmp_path / f"{default}.json").read_text())
    assert cache.get(autotuned) is None and cache.rejected == 1


def test_the_cache_key_refuses_a_mode_no_baseline_is_built_with() -> None:
    with pytest.raises(CompileModeError):
        cache_key("task", "env", "max-autotune")


# ---- the reference worker ------------------------------------------------------------------------------------


def test_each_build_is_compiled_in_the_mode_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.compile is the boundary: captured, not run (a real CPU build of the autotuned mode takes ~6 s)."""
    torch = pytest.importorskip("torch")
    from cuda_agent.judge.trusted import reference_worker

    seen: list[str] = []
    monkeypatch.setattr(torch, "compile", lambda fn, mode=None, **kw: seen.append(mode) or fn)
    model = torch.nn.Identity()
    reference_worker.compile_build(model, 0)
    reference_worker.compile_build(model, 1, AUTOTUNE)
    assert seen == ["default", AUTOTUNE]
    with pytest.raises(CompileModeError):  # refused in the trusted worker too, whatever the parent sends
        reference_worker.compile_build(model, 2, "reduce-overhead")
    assert seen == ["default", AUTOTUNE]


def test_time_setup_hands_the_mode_to_every_build(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    from cuda_agent.judge.trusted import reference_timing, reference_worker

    class Built(Exception):
        pass

    seen: list[tuple[int, str]] = []

    def build(model: object, number: int, mode: str) -> None:
        seen.append((number, mode))
        raise Built

    monkeypatch.setattr(reference_timing, "compile_build", build)
    monkeypatch.setattr(reference_timing, "fresh_compiles", lambda: None)  # leaves this process's inductor alone
    monkeypatch.setattr(kernel_trace, "warm_profiler", lambda: None)
    worker = reference_worker.ReferenceWorker()
    with pytest.raises(Built):
        worker.time_setup(["compile"], compile_builds=3, compile_mode=AUTOTUNE)
    assert seen == [(0, AUTOTUNE)]


# ---- the timing stage and the verdict ------------------------------------------------------------------------


def _timing(mode: str) -> TimingConfig:
    return TimingConfig(min_samples=30, min_gpu_ms=5.0, max_rounds=6, compile_builds=3, compile_mode=mode)


def test_the_mode_reaches_the_reference_is_cached_per_mode_and_named_in_the_verdict(
    tmp_path, monkeypatch, candidate_process
) -> None:
    asked: list[str] = []

    class Recording(Reference):
        def answer(self, command, timeout, **kw):
            if command == "time_setup":
                asked.append(kw["compile_mode"])
            return super().answer(command, timeout, **kw)

    def judge(mode: str):
        ref = Recording(candidate_process.pid)
        made = _judgment(tmp_path, monkeypatch, candidate_process, ref, _timing(mode))
        return made, made.time(ref, Candidate(candidate_process.pid))  # type: ignore[arg-type]

    made, autotuned = judge(AUTOTUNE)
    assert asked == [AUTOTUNE] and autotuned.baseline_source == "measured"
    assert autotuned.policy["compile_mode"] == AUTOTUNE
    assert f"torch.compile ({AUTOTUNE})" in made.verdict_ok(autotuned).reason
    _, default = judge("default")  # the autotuned baselines are cached, but not for this mode
    assert asked == [AUTOTUNE, "default"] and default.baseline_source == "measured"
    assert default.policy["compile_mode"] == "default"
    _, again = judge(AUTOTUNE)  # each mode's own record serves it
    assert asked == [AUTOTUNE, "default"] and again.baseline_source == "cached"
    assert again.policy["compile_mode"] == AUTOTUNE


def test_the_module_says_why_each_refused_mode_is_refused() -> None:
    assert all(why for why in REFUSED.values()) and not set(REFUSED) & set(COMPILE_MODES)
    assert check_compile_mode(compile_modes.DEFAULT) == "default"
