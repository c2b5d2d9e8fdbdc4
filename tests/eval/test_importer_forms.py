"""`cuda-agent import kernelbench` on the solution forms CUDA-L1 publishes (issue 29 item 2), in kernels written
here (examples/kernelbench_mini/load_inline_forms/): sources as locals of a method or helper, built by
concatenation, `+=`, f-strings, `.format`, `%`, `.replace` and `textwrap.dedent`; functions= from a variable;
several load_inline calls; and forms only running the file determines (sources from Python functions,
class attributes, one call site building two extensions), captured in the sandbox with nothing compiled.

The oracle is Python itself: each file runs here with load_inline replaced by a recorder, and what the
importer wrote must be exactly what load_inline would have been given."""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.utils.cpp_extension as cpp_extension
from eval_helpers import MINI, cli

from cuda_agent.eval.import_capture import capture
from cuda_agent.eval.importer import IMPLICIT_CUDA_HEADERS, convert_file, import_kernelbench
from cuda_agent.eval.judges import judge_name
from cuda_agent.eval.kernelbench import find

FORMS = MINI / "load_inline_forms"
STATIC = {"level_1_problem_19_local_sources.py", "level_1_problem_23_templates.py"}
check_model_new = judge_name("check_model_new", "trusted.static_checks", "static_checks")


def load_inline_arguments(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What load_inline receives when Python runs the file and constructs ModelNew (the oracle)."""
    calls: list[dict[str, Any]] = []

    def recorder(name, cpp_sources, cuda_sources=None, functions=None, **kwargs):
        calls.append({"name": name, "cpp": cpp_sources, "cuda": cuda_sources, "functions": functions})
        return types.SimpleNamespace()

    monkeypatch.setattr(cpp_extension, "load_inline", recorder)
    namespace: dict[str, Any] = {"__name__": "model_new", "__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    level, problem = (1, 19) if "problem_19" in path.name else (1, 23) if "problem_23" in path.name else \
        (1, 40) if "problem_40" in path.name else (2, 2)  # fmt: skip
    reference: dict[str, Any] = {}
    exec(find(MINI, level, problem).task.source, reference)
    namespace["ModelNew"](*reference["get_init_inputs"]())
    return calls


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("forms")
    return {Path(c.source).name: c for c in import_kernelbench(FORMS, out, MINI)}


def _joined(sources: str | list[str] | None) -> str:
    return "\n".join(sources) if isinstance(sources, list) else sources or ""


@pytest.mark.parametrize("name", sorted(p.name for p in FORMS.glob("*.py")))
def test_every_form_converts_to_what_load_inline_would_have_built(name: str, imported, monkeypatch) -> None:
    conversion = imported[name]
    assert conversion.status == "converted", conversion.reason
    folder = Path(conversion.out)
    expected = load_inline_arguments(FORMS / name, monkeypatch)
    assert sorted(e["name"] for e in conversion.extensions) == sorted(c["name"] for c in expected)
    for call in expected:
        cu = (folder / "kernels" / f"{call['name']}.cu").read_text()
        assert cu.endswith(IMPLICIT_CUDA_HEADERS + _joined(call["cuda"])), call["name"]
        binding = (folder / "kernels" / f"{call['name']}_binding.cpp").read_text()
        assert _joined(call["cpp"]) in binding
        for fn in call["functions"]:
            assert f'm.def("{fn}", torch::wrap_pybind_function({fn}), "{fn}");' in binding
    model_new = (folder / "model_new.py").read_text()
    assert check_model_new(model_new) == []  # the judge's static checks pass
    assert "load_inline(" not in model_new and "import cuda_extension" in model_new


def test_constant_forms_are_read_without_running_the_file(imported) -> None:
    for name in STATIC:
        assert not any("captured" in note for note in imported[name].notes), imported[name].notes


def test_run_time_forms_are_captured_and_say_why(imported) -> None:
    generated = imported["level_2_problem_2_generated.py"].notes
    captured = [n for n in generated if "captured by running the file" in n]
    source = (FORMS / "level_2_problem_2_generated.py").read_text().splitlines()
    call_line = next(i for i, line in enumerate(source, 1) if "return load_inline(" in line)
    # one call site in a helper called twice: two extensions, each saying which construct needed the run
    assert len(captured) == 2 and all(f"line {call_line} in _build" in n and "op is a parameter of _build()" in n
                                      for n in captured)  # fmt: skip
    attribute = imported["level_1_problem_40_class_attribute.py"].notes
    assert any(
        "in ModelNew.__init__" in n and "`self.CPP_SRC` is computed at run time" in n for n in attribute
    )


def test_converted_model_new_runs_against_the_built_module(imported) -> None:
    """The rewritten model_new.py constructs and calls cuda_extension's functions where the original called
    the load_inline modules (a stand-in module records the calls)."""
    calls: list[str] = []
    fake = types.ModuleType("cuda_extension")
    for fn in ("scale_shift", "gelu_clamp", "row_max", "softmax_rows"):
        setattr(fake, fn, lambda x, *rest, _fn=fn: calls.append(_fn) or x)
    sys.modules["cuda_extension"] = fake
    try:
        for name, init in (("level_2_problem_2_generated.py", (1.5, 0.25, -0.1, 2.0)),
                           ("level_1_problem_23_templates.py", ())):  # fmt: skip
            path = Path(imported[name].out) / "model_new.py"
            namespace: dict[str, Any] = {"__name__": "model_new"}
            exec(compile(path.read_text(), str(path), "exec"), namespace)
            namespace["ModelNew"](*init)(torch.ones(2, 3))
    finally:
        del sys.modules["cuda_extension"]
    assert calls == ["scale_shift", "gelu_clamp", "row_max", "softmax_rows"]


def test_the_capture_runs_sandboxed_and_bounded(tmp_path: Path) -> None:
    """The run that captures the arguments is someone else's code: as root it runs as the sandbox user,
    in a scratch folder, without the caller's environment; and it is killed at its time limit."""
    os.environ["CUDA_AGENT_IMPORT_SECRET"] = "visible"
    try:
        probe = ("import os\nfrom torch.utils.cpp_extension import load_inline\n"
                 "SRC = '// ' + str(os.getuid()) + ' ' + os.getcwd() + ' ' + os.environ.get('CUDA_AGENT_IMPORT_SECRET', '-')\n"
                 "m = load_inline('probe', SRC, SRC, functions=['f'])\nclass ModelNew:\n    pass\n")  # fmt: skip
        run = capture(tmp_path / "probe.py", probe)
    finally:
        del os.environ["CUDA_AGENT_IMPORT_SECRET"]
    assert run.error is None and len(run.calls) == 1
    uid, cwd, secret = run.calls[0]["args"]["cpp_sources"][3:].split(" ")
    assert secret == "-" and Path(cwd).name.startswith("cuda-agent-import-") and not Path(cwd).exists()
    if os.geteuid() == 0 and "unprivileged user" in run.protections.get("user", ""):
        assert uid != "0"
    spin = "import time\nwhile True:\n    time.sleep(0.1)\n"
    stopped = capture(tmp_path / "spin.py", spin, timeout=15)
    assert stopped.calls == [] and "did not finish within 15 s" in stopped.error


def test_a_failing_run_is_a_reason_naming_the_line(tmp_path: Path) -> None:
    source = tmp_path / "level_1_problem_19_helper.py"
    source.write_text("from torch.utils.cpp_extension import load_inline\n\ndef src():\n    raise KeyError('BLOCK')\n\n"
                      "class ModelNew:\n    def __init__(self):\n        self.m = load_inline('a', 'int f();', src(), "
                      "functions=['f'])\n")  # fmt: skip
    result = convert_file(source, tmp_path / "out", MINI)
    assert result.status == "refused"
    assert result.reason.startswith("load_inline at line 8 in ModelNew.__init__: argument cuda_sources: `src()` is "
                                    "computed at run time; running the file's top level, ModelNew.__init__ and forward with "
                                    "load_inline intercepted stopped at line 4 in ModelNew.__init__: KeyError")  # fmt: skip


@pytest.mark.slow
def test_a_captured_submission_builds_with_judge_build_only(imported, judge_cache: Path) -> None:
    folder = Path(imported["level_2_problem_2_generated.py"].out)
    # CI compiled gelu_clamp_ext.cu for over 180 s (the judge's default) on a loaded 2-core machine: this
    # test is about what the capture imports, not about compile time (its four units once took over 300 s
    # together, the build's old fixed total). The run's judge cache holds the PCH (a judge reads no shared
    # layer), and nothing is written to the user's own cache.
    done = cli("judge", "--build-only", "--json", "--arch", "9.0", "--build-timeout", "800",
               "--build-total-timeout", "850", str(folder),
               env={"CUDA_AGENT_CACHE": str(judge_cache)}, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    verdict = json.loads(done.stdout.splitlines()[-1])
    assert verdict["status"] == "built"
    units = {
        Path(u).name for u in verdict["checks"]["build"]["compiled"] + verdict["checks"]["build"]["cached"]
    }
    assert {"scale_shift_ext.cu", "gelu_clamp_ext.cu", "gelu_clamp_ext_binding.cpp"} <= units


# ---- renamed parameters (issue 29 item 3) -------------------------------------------------------------------


def test_renamed_parameters_are_mapped_in_model_new(imported) -> None:
    """ModelNew keeps LayerNorm's weight and bias as `weight`/`bias`, the reference as `ln.weight`/`ln.bias`:
    the imported model_new.py loads the reference's state_dict strictly, each tensor where it belongs."""
    conversion = imported["level_1_problem_40_class_attribute.py"]
    assert any("ln.weight -> weight, ln.bias -> bias" in n for n in conversion.notes), conversion.notes
    folder = Path(conversion.out)
    assert check_model_new((folder / "model_new.py").read_text()) == []
    reference: dict[str, Any] = {}
    exec((folder / "model.py").read_text(), reference)
    model = reference["Model"](*reference["get_init_inputs"]())
    sys.modules["cuda_extension"] = types.ModuleType("cuda_extension")
    try:
        namespace: dict[str, Any] = {"__name__": "model_new"}
        exec(compile((folder / "model_new.py").read_text(), "model_new.py", "exec"), namespace)
        candidate = namespace["ModelNew"](*reference["get_init_inputs"]())
    finally:
        del sys.modules["cuda_extension"]
    candidate.load_state_dict(model.state_dict(), strict=True)  # what the judge's worker does
    assert torch.equal(candidate.weight, model.ln.weight) and torch.equal(candidate.bias, model.ln.bias)
    assert not torch.equal(
        candidate.weight, torch.ones_like(candidate.weight)
    )  # the reference's, not its own


def test_parameters_that_cannot_be_paired_are_named(tmp_path: Path) -> None:
    source = tmp_path / "level_1_problem_40_packed.py"
    source.write_text(
        "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
        "class ModelNew(nn.Module):\n    def __init__(self, n, eps):\n        super().__init__()\n"
        "        self.affine = nn.Parameter(torch.ones(2, n))\n"
        "        self.ext = load_inline('ln_packed', 'torch::Tensor f(torch::Tensor x);', 'torch::Tensor f(torch::Tensor x)"
        " { return x; }', functions=['f'])\n")  # fmt: skip
    result = convert_file(source, tmp_path / "out", MINI)
    assert result.status == "converted"
    assert any("Model only has ln.weight [4096], ln.bias [4096]; ModelNew only has affine [2, 4096]" in n
               for n in result.notes), result.notes  # fmt: skip
    assert "def load_state_dict" not in (Path(result.out) / "model_new.py").read_text()


@pytest.mark.parametrize(("reference", "candidate", "mapping", "reason"), [
    ([("a.w", (4,)), ("a.b", (4,))], [("a.w", (4,)), ("a.b", (4,))], {}, ""),
    ([("fc.weight", (8, 4)), ("fc.bias", (8,)), ("scale", (1,))], [("w", (8, 4)), ("b", (8,)), ("scale", (1,))],
     {"fc.weight": "w", "fc.bias": "b"}, ""),
    ([("fc.weight", (8, 4)), ("fc.bias", (8,))], [("b", (8,)), ("w", (8, 4))], None, "cannot be paired by shape"),
    ([("w", (8, 4))], [("w", (4, 8))], None, "other shapes than Model's for w [4, 8] (Model: [8, 4])"),
    ([("w", (8,))], [("w", (8,)), ("extra", (1,))], None, "Model only has nothing; ModelNew only has extra [1]"),
])  # fmt: skip
def test_rename_map_pairs_only_what_is_unambiguous(reference, candidate, mapping, reason) -> None:
    from cuda_agent.eval.import_params import rename_map

    got, why = rename_map(reference, candidate)
    assert got == mapping and reason in why


def test_a_name_computed_at_run_time_does_not_need_a_run(tmp_path: Path) -> None:
    """A unique extension name (`f"relu_{uuid.uuid4().hex}"`) only names files: the sources are constant,
    so the file converts statically, its files named ext0."""
    source = tmp_path / "level_1_problem_19_unique_name.py"
    source.write_text(
        "import uuid\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
        "CPP = 'torch::Tensor relu_forward(torch::Tensor x);'\n\n"
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        cuda = '#include <torch/extension.h>\\n' + 'torch::Tensor relu_forward(torch::Tensor x) { return x.relu(); }'\n"
        "        self.ext = load_inline(name=f'relu_{uuid.uuid4().hex}', cpp_sources=CPP, cuda_sources=cuda,\n"
        "                               functions=['relu_forward'])\n\n"
        "    def forward(self, x):\n        return self.ext.relu_forward(x)\n")  # fmt: skip
    result = convert_file(source, tmp_path / "out", None)  # no reference: nothing runs the file
    assert result.status == "converted", result.reason
    assert any("extension name `f'relu_{uuid.uuid4().hex}'` is computed at run time; files named ext0" in n
               for n in result.notes)  # fmt: skip
    assert not any("captured" in n for n in result.notes)
    model_new = (Path(result.out) / "model_new.py").read_text()
    assert (Path(result.out) / "kernels" / "ext0.cu").is_file() and "import uuid" not in model_new


def test_an_extension_built_lazily_in_forward_is_captured_on_the_task_inputs(tmp_path: Path) -> None:
    """The extension is built on the first forward call, its source specialised to the input's width: the
    capture calls forward once on the reference's inputs (made on the meta device, no memory) and takes
    the source load_inline would have been given for the task's shapes."""
    source = tmp_path / "level_1_problem_19_lazy.py"
    source.write_text(
        "import torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
        "CPP = 'torch::Tensor relu_forward(torch::Tensor x);'\n"
        "BODY = 'torch::Tensor relu_forward(torch::Tensor x) { return x.relu(); }'\n\n"
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.ext = None\n\n"
        "    def forward(self, x):\n        if self.ext is None:\n"
        "            src = f'constexpr long kCols = {x.shape[-1]};\\n' + BODY\n"
        "            self.ext = load_inline('relu_lazy', CPP, src, functions=['relu_forward'])\n"
        "        return self.ext.relu_forward(x)\n")  # fmt: skip
    reference: dict[str, Any] = {}
    exec(find(MINI, 1, 19).task.source, reference)
    width = reference["get_inputs"]()[0].shape[-1]
    result = convert_file(source, tmp_path / "out", MINI)
    assert result.status == "converted", result.reason
    assert any("captured by running the file" in n and "in ModelNew.forward" in n for n in result.notes)
    cu = (Path(result.out) / "kernels" / "relu_lazy.cu").read_text()
    assert f"constexpr long kCols = {width};\ntorch::Tensor relu_forward" in cu
    model_new = (Path(result.out) / "model_new.py").read_text()
    assert "self.ext = cuda_extension" in model_new and "src = " not in model_new


def test_a_reference_that_cannot_be_built_on_meta_leaves_parameters_uncompared(tmp_path: Path) -> None:
    """The parameter comparison builds the reference on the meta device; one that reads a value there
    (`.item()`) cannot be, and the import still succeeds with a note saying the parameters were not compared."""
    tasks = tmp_path / "kb" / "level1"
    tasks.mkdir(parents=True)
    reference = (MINI / "level1" / "19_ReLU.py").read_text().replace(
        "super(Model, self).__init__()", "super(Model, self).__init__()\n        self.k = torch.ones(1).item()")  # fmt: skip
    assert "self.k = " in reference
    (tasks / "19_ReLU.py").write_text(reference)
    result = convert_file(FORMS / "level_1_problem_19_local_sources.py", tmp_path / "out", tmp_path / "kb")
    assert result.status == "converted", result.reason
    assert any(n.startswith("parameters not compared with Model's") and "reference Model on the meta device" in n
               for n in result.notes), result.notes  # fmt: skip


def test_a_call_in_a_loop_is_captured_once_per_iteration(tmp_path: Path) -> None:
    """One load_inline call site in a loop builds one extension per iteration, each from its own source (a
    static reading would see one): such a call goes to the capture run, which sees every iteration."""
    source = tmp_path / "level_1_problem_19_loop.py"
    source.write_text(
        "import torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.exts = []\n"
        "        src = '// shared\\n'\n"
        "        for fn in ('relu_a', 'relu_b'):\n"
        "            self.exts.append(load_inline(fn, f'torch::Tensor {fn}(torch::Tensor x);', src + "
        "f'torch::Tensor {fn}(torch::Tensor x) {{ return x.relu(); }}', functions=[fn]))\n"
        "            src += '// after ' + fn + '\\n'\n\n"
        "    def forward(self, x):\n        return self.exts[1].relu_b(self.exts[0].relu_a(x))\n")  # fmt: skip
    result = convert_file(source, tmp_path / "out", MINI)
    assert result.status == "converted", result.reason
    kernels = Path(result.out) / "kernels"
    assert (kernels / "relu_a.cu").read_text().endswith("// shared\ntorch::Tensor relu_a(torch::Tensor x) { return x.relu(); }")
    assert "// shared\n// after relu_a\ntorch::Tensor relu_b" in (kernels / "relu_b.cu").read_text()
    assert any("it is called inside a for loop at line 9" in n for n in result.notes), result.notes
