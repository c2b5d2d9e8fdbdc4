"""Module aliases in model_new.py (issue 33, class 3): the AST rules refuse profiler and private attributes
of a module however the module was bound. A rule that knew only imported names was evaded by `T = torch`:
`T.autograd._profiler_enabled()` told traced calls from untraced ones, and PyTorch's SDPA ran on the rest."""

from __future__ import annotations

import ast

import pytest

from cuda_agent.judge.trusted.module_aliases import ModuleAliases
from cuda_agent.judge.trusted.static_checks import check_model_new

HEAD = "import torch\nimport torch.nn as nn\n"
PROBE = "{}.autograd._profiler_enabled()"


@pytest.mark.parametrize(
    ("binding", "alias"),
    [
        ("T = torch", "T"),
        ("import torch as T", "T"),
        ("from torch import autograd as A", "A.profiler"),  # A.profiler._is_profiler_enabled
        ("P = torch.autograd.profiler", "P"),
        ("T = torch\nU = T\nV = U", "V"),  # chained
        ("T, n = torch, 3", "T"),  # tuple assignment
        ("n, (T, m) = 3, (torch, 4)", "T"),  # nested
        ("[T] = [torch]", "T"),
        ("T, *rest = torch, 1, 2", "T"),
        ("pair = (1, torch)\nn, T = pair", "T"),  # unpacked from a container of modules
        ("mods = [torch]", "mods[0]"),
        ("mods = {'t': torch}", "mods['t']"),
        ("if (T := torch):\n    pass", "T"),
        ("T = torch if True else None", "T"),
        ("for T in (torch,):\n    pass", "T"),
        ("def get():\n    return torch", "get()"),
        ("def ident(m):\n    return m\nT = ident(torch)", "T"),
        ("T = (lambda m: m)(torch)", "T"),
        ("T: object = torch", "T"),
    ],
)
def test_a_module_bound_any_way_is_still_a_module(binding: str, alias: str) -> None:
    attribute = "_is_profiler_enabled" if alias.endswith("profiler") else "autograd._profiler_enabled"
    source = f"{HEAD}{binding}\n\ndef f():\n    return {alias}.{attribute}()\n"
    findings = [str(f) for f in check_model_new(source)]
    assert any("private attribute of a module" in f for f in findings), (source, findings)


@pytest.mark.parametrize(
    "source",
    [
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.t = torch\n"
        "    def forward(self, x):\n        return x if self.t.autograd._profiler_enabled() else x",
        "class ModelNew(nn.Module):\n    T = torch\n    def forward(self, x):\n        return self.T.autograd.profiler",
        "class ModelNew(nn.Module):\n    def forward(self, x, T=torch):\n        return T.autograd.profiler",
        "class ModelNew(nn.Module):\n    def forward(self, x, *, T=torch):\n        return T.autograd.profiler",
        "class ModelNew(nn.Module):\n    def m(self):\n        return torch\n    def forward(self, x):\n        return self.m().autograd.profiler",
    ],
)
def test_modules_held_by_self_the_class_defaults_and_methods(source: str) -> None:
    findings = [str(f) for f in check_model_new(HEAD + source)]
    assert any("profiler" in f or "private attribute" in f for f in findings), findings


def test_patching_through_an_alias_is_patching_a_module() -> None:
    findings = [str(f) for f in check_model_new(HEAD + "T = torch\nT.cuda.synchronize = print\n")]
    assert any("patches a module" in f for f in findings), findings


@pytest.mark.parametrize(
    "source",
    [
        # an honest ModelNew: tensors made with module constants, parameters, a functional alias
        "import torch.nn.functional as F\nimport cuda_extension\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self, n):\n"
        "        super().__init__()\n"
        "        dt = torch.float16\n"
        "        self.weight = nn.Parameter(torch.empty(n, n, dtype=dt))\n"
        "        self.scale = torch.ones(n, dtype=torch.float32, device='cuda')\n"
        "        self.act = F.gelu\n"
        "    def forward(self, x):\n"
        "        y = torch.empty_like(x, dtype=torch.float16)\n"
        "        out = cuda_extension.op(x, self.weight, y)\n"
        "        return out.view(x.shape[0], -1)\n",
    ],
)
def test_honest_code_with_module_constants_is_not_a_module(source: str) -> None:
    assert check_model_new(HEAD + source) == []
    tree = ast.parse(HEAD + source)
    imported = {"torch", "nn", "F", "cuda_extension"}
    paths = ModuleAliases(tree, imported).paths
    assert not {"dt", "self.weight", "self.scale", "y", "out"} & paths, paths
    assert "self.act" in paths  # a function of a module: a module path (its private attributes are internals)
