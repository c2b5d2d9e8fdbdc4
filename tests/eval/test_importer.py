"""`cuda-agent import kernelbench` on our own load_inline-style kernels (examples/kernelbench_mini/load_inline/):
several shapes of the call, several functions, extra_cuda_cflags, files it must refuse with the reason;
the kernel code is kept as it was, model_new.py calls cuda_extension and passes the judge's static checks,
and an imported submission builds with `cuda-agent judge --build-only`."""

from __future__ import annotations

import ast
import json
import sys
import types
from pathlib import Path

import pytest
import torch
from eval_helpers import MINI, cli

from cuda_agent.cli import main
from cuda_agent.eval.importer import IMPLICIT_CUDA_HEADERS, convert_file
from cuda_agent.eval.judges import judge_name

SOURCES = MINI / "load_inline"
check_model_new = judge_name("check_model_new", "trusted.static_checks", "static_checks")


def constants_of(path: Path) -> dict[str, object]:
    """The file's module-level constants as Python itself evaluates them (imports and calls left out)."""
    tree = ast.parse(path.read_text())
    keep = [n for n in tree.body if isinstance(n, ast.Assign) and not isinstance(n.value, ast.Call)
            and all(isinstance(t, ast.Name) for t in n.targets)]  # fmt: skip
    namespace: dict[str, object] = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


def run_model_new(folder: Path, functions: dict[str, object], *init: object) -> torch.nn.Module:
    """Import the converted model_new.py with `cuda_extension` standing for the built module."""
    fake = types.ModuleType("cuda_extension")
    for name, fn in functions.items():
        setattr(fake, name, fn)
    sys.modules["cuda_extension"] = fake
    try:
        namespace: dict[str, object] = {"__name__": "model_new"}
        exec(compile((folder / "model_new.py").read_text(), str(folder / "model_new.py"), "exec"), namespace)
        return namespace["ModelNew"](*init)  # type: ignore[operator]
    finally:
        del sys.modules["cuda_extension"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("imported")
    assert main(["import", "kernelbench", str(SOURCES), "--out", str(out), "--tasks", str(MINI)]) == 1  # 2 refused
    return out, json.loads((out / "import.json").read_text())


def test_every_file_is_converted_or_refused_with_its_reason(imported) -> None:
    _, report = imported
    by_file = {Path(c["source"]).name: c for c in report["conversions"]}
    assert len(by_file) == len(list(SOURCES.rglob("*.py")))  # none silently dropped
    refused = {name: c["reason"] for name, c in by_file.items() if c["status"] == "refused"}
    assert set(refused) == {"level_1_problem_19_sample_1_kernel.py", "level_3_problem_1_sample_0_kernel.py"}
    assert "cuda_source is computed at run time" in refused["level_1_problem_19_sample_1_kernel.py"]
    assert "no load_inline call" in refused["level_3_problem_1_sample_0_kernel.py"]
    tasks = {name: c["task_id"] for name, c in by_file.items() if c["status"] == "converted"}
    assert tasks == {"level_1_problem_19_sample_0_kernel.py": "level1/19_ReLU", "23_Softmax.py": "level1/23_Softmax",
                     "level_1_problem_19_sample_2_kernel.py": "level1/19_ReLU",
                     "level_1_problem_40_sample_0_kernel.py": "level1/40_LayerNorm",
                     "level_2_problem_2_sample_0_kernel.py": "level2/2_Scale_GELU_Clamp"}  # fmt: skip
    # two samples of one problem: two folders (episodes of one task), not one overwriting the other
    assert {Path(by_file[f]["out"]).name for f in tasks if tasks[f] == "level1/19_ReLU"} == {"level1_19_ReLU",
                                                                                           "level1_19_ReLU-2"}  # fmt: skip
    for name, conversion in by_file.items():
        if conversion["status"] != "converted":
            continue
        folder = Path(conversion["out"])
        meta = json.loads((folder / ".task.json").read_text())
        level, problem = meta["level"], meta["problem"]
        reference = next((MINI / f"level{level}").glob(f"{problem}_*.py"))
        assert (folder / "model.py").read_text() == reference.read_text()
        model_new = (folder / "model_new.py").read_text()
        assert check_model_new(model_new) == []  # the judge's static checks of model_new.py pass
        original = ast.parse((SOURCES / name if (SOURCES / name).exists() else SOURCES / "level1" / name).read_text())
        converted = ast.parse(model_new)
        names = {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(converted)
                 if isinstance(n, ast.Name | ast.Attribute)}  # fmt: skip
        assert "load_inline" not in names and "cpp_extension" not in names and "import cuda_extension" in model_new
        if name != "level_1_problem_40_sample_0_kernel.py":  # the others build the extension outside ModelNew
            assert _class_source(original) == _class_source(converted)


def _class_source(tree: ast.Module) -> str:
    return next(ast.unparse(n) for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")


def test_kernel_code_is_kept_unchanged(imported) -> None:
    out, _ = imported
    relu = constants_of(SOURCES / "level_1_problem_19_sample_0_kernel.py")
    cu = (out / "level1_19_ReLU" / "kernels" / "relu.cu").read_text()
    assert cu.endswith(IMPLICIT_CUDA_HEADERS + relu["relu_source"])  # load_inline's headers, then the source
    binding = (out / "level1_19_ReLU" / "kernels" / "relu_binding.cpp").read_text()
    assert relu["relu_cpp_source"] in binding and "#include <torch/extension.h>" in binding
    assert 'm.def("relu_cuda", torch::wrap_pybind_function(relu_cuda), "relu_cuda");' in binding
    assert "REGISTER_BINDING(relu, cuda_agent_register_relu);" in binding

    # concatenation and an f-string over a constant, positional arguments, -D macros and flags
    softmax = constants_of(SOURCES / "level1" / "23_Softmax.py")
    cu = (out / "level1_23_Softmax" / "kernels" / "softmax_ext.cu").read_text()
    assert cu.endswith("#define SOFTMAX_EXP __expf\n" + IMPLICIT_CUDA_HEADERS + softmax["softmax_head"]
                       + softmax["softmax_body"])  # fmt: skip
    assert "constexpr int kThreads = 256;" in cu

    # lists of sources joined as load_inline joins them; a dict of functions with docstrings
    fused = constants_of(SOURCES / "level_2_problem_2_sample_0_kernel.py")
    folder = out / "level2_2_Scale_GELU_Clamp"
    assert (folder / "kernels" / "scale_gelu_clamp.cu").read_text().endswith("\n".join(fused["kernels"]))
    binding = (folder / "kernels" / "scale_gelu_clamp_binding.cpp").read_text()
    assert "\n".join(fused["declarations"]) in binding
    assert 'm.def("scale_shift_cuda", torch::wrap_pybind_function(scale_shift_cuda), "x * scale + shift");' in binding
    assert 'm.def("gelu_clamp_cuda", torch::wrap_pybind_function(gelu_clamp_cuda), "clamp(gelu(x), lo, hi)");' in binding

    # cpp_sources with their own PYBIND11_MODULE: that block becomes the registration
    binding = (out / "level1_40_LayerNorm" / "kernels" / "layernorm_ext_binding.cpp").read_text()
    assert "PYBIND11_MODULE" not in binding
    assert "static void cuda_agent_register_layernorm_ext(pybind11::module& m) {" in binding
    assert 'm.def("layernorm_forward", &layernorm_forward, "LayerNorm over the last dimension");' in binding

    # no_implicit_headers: nothing prepended, plain m.def without PyTorch's error wrapper
    plain = constants_of(SOURCES / "level_1_problem_19_sample_2_kernel.py")
    folder = out / "level1_19_ReLU-2" / "kernels"
    assert (folder / "relu_vec4.cu").read_text().endswith("\n" + plain["CUDA_SRC"])
    assert IMPLICIT_CUDA_HEADERS not in (folder / "relu_vec4.cu").read_text()
    assert 'm.def("relu_forward", &relu_forward, "relu_forward");' in (folder / "relu_vec4_binding.cpp").read_text()


def test_notes_say_what_the_judge_build_does_not_apply(imported) -> None:
    _, report = imported
    notes = next(c["notes"] for c in report["conversions"] if c["source"].endswith("23_Softmax.py"))
    assert any("-maxrregcount=64" in n and "not applied" in n for n in notes)
    assert any("TORCH_CUDA_ARCH_LIST" in n and "dropped" in n for n in notes)
    assert not any("'-O3'" in n for n in notes)  # the judge builds with it anyway
    # ...but not with fast math (issue 35 class 9): the note says the flag is not applied
    assert any("'--use_fast_math'" in n and "not applied" in n for n in notes)


def test_converted_model_new_calls_cuda_extension(imported) -> None:
    out, _ = imported
    calls: list[tuple[str, tuple]] = []

    def recorder(name: str):
        def fn(*args):
            calls.append((name, args))
            return args[0] + 1
        return fn

    x = torch.randn(4, 8)
    model = run_model_new(out / "level2_2_Scale_GELU_Clamp", {"scale_shift_cuda": recorder("scale_shift"),
                          "gelu_clamp_cuda": recorder("gelu_clamp")}, 1.5, 0.25, -0.1, 2.0)  # fmt: skip
    assert torch.equal(model(x), (x + 1) + 1)  # one call after the other
    assert [(n, a[1:]) for n, a in calls] == [("scale_shift", (1.5, 0.25)), ("gelu_clamp", (-0.1, 2.0))]
    calls.clear()
    model = run_model_new(out / "level1_40_LayerNorm", {"layernorm_forward": recorder("layernorm")}, 8, 1e-5)
    model(x)
    assert calls and calls[0][0] == "layernorm" and calls[0][1][1] is model.ln.weight and calls[0][1][3] == 1e-5


REFUSE = {
    "load_from_files": ("from torch.utils.cpp_extension import load\next = load(name='x', sources=['k.cu'])\n",
                        "cpp_extension.load"),
    "triton": ("import triton\nfrom torch.utils.cpp_extension import load_inline\n", "Triton"),
    "include_paths": ("from torch.utils.cpp_extension import load_inline\nSRC = 'x'\nm = load_inline('a', SRC, SRC, "
                      "functions=['f'], extra_include_paths=['/opt/inc'])\n", "extra_include_paths"),
    "kwargs": ("from torch.utils.cpp_extension import load_inline\nopts = dict(name='a')\nm = load_inline(**opts)\n",
               "**kwargs"),
    "clash": ("from torch.utils.cpp_extension import load_inline\nS = 'x'\na = load_inline('a', S, S, functions=['f'])\n"
              "b = load_inline('b', S, S, functions=['f'])\n", "exposed by both"),
    # sources no static reading determines, and running the file does not either: the reason names both
    "read_at_run_time": ("from torch.utils.cpp_extension import load_inline\nSRC = open('k.cu').read()\n"
                         "m = load_inline('a', SRC, SRC, functions=['f'])\n",
                         "SRC is computed at run time (`SRC = open('k.cu').read()`); running the file's top level"
                         ", ModelNew.__init__ and forward with load_inline intercepted stopped at line 2 in the module's top "
                         "level: FileNotFoundError"),
    "built_lazily": ("from torch.utils.cpp_extension import load_inline\n_ext = None\ndef ext(n):\n"
                     "    global _ext\n    _ext = _ext or load_inline('a', 'int f();', f'// {n}', functions=['f'])\n"
                     "    return _ext\n",
                     "load_inline at line 5 in ext: argument cuda_sources: n is a parameter of ext(); running the "
                     "file's top level, ModelNew.__init__ and forward with load_inline intercepted did not reach it: "
                     "forward on the task's inputs (meta device) stopped: TypeError"),
    "no_functions": ("from torch.utils.cpp_extension import load_inline\nm = load_inline('a', 'int f();', 'int f()"
                     "{return 1;}')\n", "nothing says what the extension exposes"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REFUSE))
def test_files_that_cannot_be_converted_mechanically_are_refused(case: str, tmp_path: Path) -> None:
    body, reason = REFUSE[case]
    source = tmp_path / "level_1_problem_19_x.py"
    source.write_text(body + "\nclass ModelNew:\n    pass\n")
    result = convert_file(source, tmp_path / "out", MINI)
    assert result.status == "refused" and reason in result.reason, result.reason
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_refused_without_a_reference_to_match(tmp_path: Path) -> None:
    good = (SOURCES / "level_1_problem_19_sample_0_kernel.py").read_text()
    (tmp_path / "relu_kernel.py").write_text(good)
    (tmp_path / "level_1_problem_77_kernel.py").write_text(good)
    assert "cannot tell its level and problem" in convert_file(tmp_path / "relu_kernel.py", tmp_path / "o", MINI).reason
    assert "has no level 1 problem 77" in convert_file(tmp_path / "level_1_problem_77_kernel.py", tmp_path / "o",
                                                       MINI).reason  # fmt: skip
    # Without --tasks it converts, and says that model.py is missing.
    result = convert_file(tmp_path / "relu_kernel.py", tmp_path / "o", None)
    assert result.status == "converted" and any("no reference model.py" in n for n in result.notes)


@pytest.mark.slow
def test_an_imported_submission_builds_with_judge_build_only(imported, judge_cache: Path) -> None:
    out, _ = imported
    # A loaded 2-core CI machine can take minutes per file: this test is about the import, not compile time.
    # The run's judge cache holds the PCH (a judge reads no shared layer); the user's own cache is not touched.
    done = cli("judge", "--build-only", "--json", "--arch", "9.0", "--build-timeout", "500",
               "--build-total-timeout", "560", str(out / "level1_19_ReLU-2"), timeout=600,
               env={"CUDA_AGENT_CACHE": str(judge_cache)})
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    verdict = json.loads(done.stdout.splitlines()[-1])
    assert verdict["status"] == "built" and verdict["stages"]["build"] == "passed"
    units = {Path(u).name for u in verdict["checks"]["build"]["compiled"] + verdict["checks"]["build"]["cached"]}
    assert {"relu_vec4.cu", "relu_vec4_binding.cpp"} <= units  # both generated files were built


def test_untrusted_file_names_and_sizes(tmp_path: Path) -> None:
    """A file name goes into the generated C++ comments: a newline in it must not become code."""
    good = (SOURCES / "level_1_problem_19_sample_0_kernel.py").read_text()
    sneaky = tmp_path / "level_1_problem_19_x\nint injected = 1;\n.py"
    sneaky.write_text(good)
    result = convert_file(sneaky, tmp_path / "out", MINI)
    assert result.status == "converted"
    for unit in (Path(result.out) / "kernels").iterdir():
        assert "\nint injected" not in unit.read_text()
    big = tmp_path / "level_1_problem_19_big.py"
    big.write_text(good + "#" * (5 << 20))
    assert "larger than 4 MiB" in convert_file(big, tmp_path / "out", MINI).reason
