"""Real nvcc/g++ builds of kernels/: a bundled example, the object cache, the precompiled header, and
compiler errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cuda_agent.judge.trusted import build as build_module
from cuda_agent.judge.trusted import pch as pch_module
from cuda_agent.judge.trusted.build import (
    BuildConfig,
    SubmissionError,
    build_extension,
    compile_command,
    ensure_pch,
    pch_command,
    stage_submission,
)
from cuda_agent.judge.trusted.compiler_log import trim_compiler_output
from cuda_agent.judge.trusted.toolchain import discover

EXAMPLES = Path(__file__).parents[2] / "examples"

BROKEN_CU = """
#include <cuda_runtime.h>
__global__ void k(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = undeclared_value;
}
extern "C" void launch(float* out, int n, cudaStream_t s) { k<<<(n + 255) / 256, 256, 0, s>>>(out, n); }
"""


# A binding unit that needs only binding_registry.h (pybind11): the cheapest one that wants the PCH.
SMALL_BINDING = """
#include "../binding_registry.h"
static int answer() { return 42; }
static void register_small(pybind11::module& m) { m.def("answer", &answer); }
REGISTER_BINDING(small, register_small);
"""


def _identity(path: Path) -> tuple[int, int]:
    """Which file this is: a rebuilt header is written anew and renamed into place (a new inode). Not the
    mtime: a cache hit refreshes it for the LRU pruning (judge/cache.py)."""
    stat = path.stat()
    return stat.st_ino, stat.st_size


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("objects")


@pytest.mark.slow
def test_bundled_example_builds_imports_and_reuses_objects(tmp_path: Path, cache_dir: Path) -> None:
    config = BuildConfig(arch="9.0", cache_dir=cache_dir)
    kernels = EXAMPLES / "elementwise_chain" / "kernels"
    first = build_extension(kernels, tmp_path / "a", config)
    assert first.ok, first.full_log
    assert first.module_path is not None and first.module_path.name == "cuda_extension.so"
    assert "kernels/elementwise_chain.cu" in first.compiled
    # The binding units were compiled with the judge's PCH, and the module they make links and loads.
    assert first.pch and not first.pch_note, first.pch_note
    binding_commands = [c for c in first.commands if c.endswith("-Winvalid-pch")]
    assert binding_commands and all("-include" in c for c in binding_commands)
    gch = next((cache_dir / "pch").glob("*/torch_binding_pch.h.gch"))
    built = _identity(gch)
    # The module loads (CUDA libraries load lazily, so no GPU is needed) and registered its op.
    probe = (
        "import sys, torch; sys.path.insert(0, sys.argv[1]); import cuda_extension as m; "
        "print(sorted(n for n in dir(m) if not n.startswith('_')))"
    )
    listed = subprocess.run([sys.executable, "-c", probe, str(first.module_path.parent)],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "forward" in listed.stdout
    # Nothing changed: every object comes from the cache.
    second = build_extension(kernels, tmp_path / "b", config)
    # (The judge's own units are compiled once per process: an earlier build in this test process, from
    # another file when tests run two to a process, may have made them, and then the first build had them.)
    assert second.ok and not second.compiled and set(second.cached) == set(first.compiled) | set(first.cached)
    # One .cu changed: only that file is recompiled.
    changed = tmp_path / "kernels"
    shutil.copytree(kernels, changed)
    cu = next(changed.glob("*.cu"))
    cu.write_text(cu.read_text() + "\n// touched\n")
    third = build_extension(changed, tmp_path / "c", config)
    assert third.ok and third.compiled == (f"kernels/{cu.name}",)
    # Its steps are timed (the stage table's build_compile / build_link): both ran, within the whole.
    assert set(third.step_seconds) == {"compile", "link"}
    assert all(s > 0 for s in third.step_seconds.values())
    assert sum(third.step_seconds.values()) <= third.seconds + 0.01
    # each unit compiled this time has its own seconds, within the compile step's wall
    assert set(third.unit_seconds) == set(third.compiled)
    assert all(0 < s <= third.step_seconds["compile"] + 0.01 for s in third.unit_seconds.values())
    # The binding changed: it is recompiled with the cached PCH, which is not built again.
    binding = next(changed.glob("*_binding.cpp"))
    binding.write_text(binding.read_text() + "\n// touched\n")
    fourth = build_extension(changed, tmp_path / "d", config)
    assert fourth.ok and fourth.compiled == (f"kernels/{binding.name}",), fourth.full_log
    assert fourth.pch and not any("c++-header" in c for c in fourth.commands)
    assert _identity(gch) == built


@pytest.mark.slow
def test_pch_is_taken_by_gcc_and_built_once(tmp_path: Path, cache_dir: Path) -> None:
    config = BuildConfig(arch="9.0", cache_dir=cache_dir)
    header = ensure_pch(config)
    assert header is not None and header.is_relative_to(cache_dir)
    gch = header.with_name(header.name + ".gch")
    built = _identity(gch)
    # g++ -H marks a precompiled header it loads with "!" (and lists the header itself when it does not).
    source = tmp_path / "probe_binding.cpp"
    source.write_text("#include <torch/types.h>\nint probe() { return 1; }\n")
    command = compile_command(source, tmp_path / "probe.o", discover(), config, header)
    probe = subprocess.run([*command, "-fsyntax-only", "-H"], capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr
    assert probe.stderr.splitlines()[0] == f"! {gch}", probe.stderr[:2000]
    assert ensure_pch(config) == header and _identity(gch) == built


@pytest.mark.slow
def test_build_falls_back_without_pch_when_it_does_not_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pch_module, "PCH_HEADER", "#include <cuda_agent_no_such_header.h>\n")
    config = BuildConfig(arch="9.0", cache_dir=tmp_path / "objects")
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "small_binding.cpp").write_text(SMALL_BINDING)
    result = build_extension(kernels, tmp_path / "out", config)
    assert result.ok, result.full_log
    assert not result.pch and "failed to compile" in result.pch_note
    assert any("c++-header" in c for c in result.commands)  # it was tried...
    # ...and the units went without. The judge's own binding.cpp is compiled once per judge process (into
    # a private folder, see build._private_objects), so an earlier test may already have made it.
    units = [c for c in result.commands if " -c " in c]
    assert any("small_binding.cpp" in c for c in units) and not any("-include" in c for c in units)
    assert not result.log  # a fallback, not an error the agent sees
    # The failure is recorded: later builds and ensure_pch do not try again.
    assert len(list((tmp_path / "objects" / "pch").glob("*/failed.log"))) == 1
    assert ensure_pch(config) is None
    assert not list((tmp_path / "objects" / "pch").glob("*/*.gch"))


def test_pch_and_binding_units_share_flags_and_only_torch_units_take_it(tmp_path: Path) -> None:
    tc, config = discover(), BuildConfig(arch="9.0")
    header = tmp_path / "pch" / "torch_binding_pch.h"
    unit = compile_command(tmp_path / "kernels" / "op_binding.cpp", tmp_path / "op.o", tc, config, header)
    pch = pch_command(header, tmp_path / "out.gch", tc, config)

    def code_flags(command: list[str]) -> list[str]:
        return [a for a in command if a.startswith(("-O", "-D", "-I", "-f", "-std", "-m"))]

    assert code_flags(unit) == code_flags(pch)
    assert unit[unit.index("-include") + 1] == str(header)
    assert config.host_optimization in unit and config.optimization not in unit
    cu = compile_command(tmp_path / "kernels" / "op.cu", tmp_path / "cu.o", tc, config)
    assert config.optimization in cu and "-include" not in cu
    # The PCH is compiled from the judge's header alone: no submission folder is on its include path.
    assert not any("kernels" in a for a in pch)
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "op_binding.cpp").write_text(SMALL_BINDING)
    (kernels / "gemm.cpp").write_text("#include <cublas_v2.h>\nint f() { return 1; }\n")
    assert pch_module.wants_pch(kernels / "op_binding.cpp")
    assert not pch_module.wants_pch(kernels / "gemm.cpp")


def test_compile_error_comes_back_trimmed_with_workspace_paths(tmp_path: Path, cache_dir: Path) -> None:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "broken.cu").write_text(BROKEN_CU)
    result = build_extension(kernels, tmp_path / "out", BuildConfig(arch="9.0", cache_dir=cache_dir))
    assert not result.ok and not result.timed_out
    assert "kernels/broken.cu(5)" in result.log
    assert "undeclared_value" in result.log
    assert "stage-" not in result.log  # staging paths are rewritten
    assert len(result.log.splitlines()) < 20


def test_submission_infrastructure_files_are_ignored(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "op.cu").write_text("// empty\n")
    (tmp_path / "binding.cpp").write_text("#error tampered\n")
    stage = tmp_path / "stage"
    sources = stage_submission(kernels, stage)
    assert (stage / "binding.cpp").read_text().startswith("// binding.cpp -- fixed infrastructure")
    # The judge's own units first: its binding and its driver gate (driver_gate.py), then the submission's.
    assert [s.name for s in sources] == ["binding.cpp", "judge_driver_gate.cpp", "op.cu"]
    assert "kAllowed" in (stage / "judge_driver_gate.cpp").read_text()


def test_bad_kernels_folders_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SubmissionError, match="no kernels/"):
        stage_submission(tmp_path / "missing", tmp_path / "s1")
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "notes.txt").write_text("nothing to build")
    with pytest.raises(SubmissionError, match=r"no \.cu"):
        stage_submission(kernels, tmp_path / "s2")
    (kernels / "link.cu").symlink_to("/etc/passwd")
    with pytest.raises(SubmissionError, match="symbolic link"):
        stage_submission(kernels, tmp_path / "s3")


def test_trim_keeps_errors_and_caps_length() -> None:
    noise = [f"note: instantiated from here {i}" for i in range(500)]
    text = "\n".join([*noise, "a.cu(3): error: identifier x is undefined", "   x = 1;", "   ^"])
    trimmed = trim_compiler_output(text)
    assert trimmed[0] == "a.cu(3): error: identifier x is undefined"
    assert len(trimmed) <= 61


def test_the_link_uses_gold_where_the_compiler_can_and_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gold links a submission against torch's libraries in about a third of GNU ld's time; a compiler
    that cannot use it keeps its own linker, and CUDA_AGENT_LINKER chooses explicitly."""
    from cuda_agent.judge.trusted.toolchain import ToolchainError, fast_linker

    broken = tmp_path / "cxx"  # a compiler driver that refuses every -fuse-ld
    broken.write_text("#!/bin/sh\necho 'unrecognized -fuse-ld' >&2\nexit 1\n")
    broken.chmod(0o755)
    assert fast_linker(str(broken)) == ()
    # gold that answers --version but cannot link (the H200 host: it could not open libstdc++.so)
    half = tmp_path / "half-cxx"
    half.write_text(
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = -Wl,--version ] && { echo 'GNU gold 1.16'; exit 0; }; done\n"
        "echo 'ld.gold: error: cannot open libstdc++.so' >&2\nexit 1\n"
    )
    half.chmod(0o755)
    assert fast_linker(str(half)) == ()
    monkeypatch.setenv("CUDA_AGENT_LINKER", "gold")
    with pytest.raises(ToolchainError, match="cannot open libstdc"):
        fast_linker(str(half))
    with pytest.raises(ToolchainError, match="binutils-gold"):
        fast_linker(str(broken))
    monkeypatch.setenv("CUDA_AGENT_LINKER", "default")
    assert fast_linker("c++") == ()
    monkeypatch.delenv("CUDA_AGENT_LINKER")
    if shutil.which("ld.gold"):
        assert fast_linker("c++") == ("-fuse-ld=gold",)
        objects = [tmp_path / "x.o"]
        assert "-fuse-ld=gold" in build_module.link_command(objects, tmp_path / "x.so", discover())


# A host function passing a __device__ lambda to a kernel template: nvcc needs --extended-lambda for it.
LAMBDA_CU = """
#include <cuda_runtime.h>
template <typename F> __global__ void apply(float* x, int n, F f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = f(x[i]);
}
void double_all(float* x, int n) { apply<<<(n + 255) / 256, 256>>>(x, n, [] __device__ (float v) { return 2.0f * v; }); }
"""


@pytest.mark.slow
def test_extended_lambdas_are_turned_on_only_for_the_unit_that_asks(tmp_path: Path, cache_dir: Path) -> None:
    """--extended-lambda costs every .cu about a third of its compile: only a unit whose compile fails
    asking for it gets it, and its object is cached like any other."""
    config = BuildConfig(arch="9.0", cache_dir=cache_dir)
    kernels = tmp_path / "kernels"
    shutil.copytree(EXAMPLES / "elementwise_chain" / "kernels", kernels)
    (kernels / "lambda_apply.cu").write_text(LAMBDA_CU)
    first = build_extension(kernels, tmp_path / "a", config)
    assert first.ok, first.full_log
    by_unit = {c.split(" -c ")[1].split()[0].rsplit("/", 1)[-1]: c for c in first.commands if " -c " in c}
    assert "--extended-lambda" in by_unit["lambda_apply.cu"]
    assert "--extended-lambda" not in by_unit.get("elementwise_chain.cu", "")
    assert not any("--extended-lambda" in c for name, c in by_unit.items() if name != "lambda_apply.cu")
    again = build_extension(kernels, tmp_path / "b", config)
    assert again.ok and not again.compiled, again.compiled
