"""Static filter and decontamination."""

from __future__ import annotations

from cuda_agent.synth.astnorm import ast_digest, op_sequence
from cuda_agent.synth.decontam import BenchmarkIndex, DecontamConfig
from cuda_agent.synth.filters.static import StaticFilter, check_static

GOOD = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv, then ReLU, then a bias add."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        x = x + self.bias
        return x


batch_size = 128
in_channels = 3
out_channels = 16
height, width = 32, 32
kernel_size = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
'''

RENAMED = (
    GOOD.replace("self.conv", "self.convolution")
    .replace("bias_shape", "b_shape")
    .replace("x = ", "h = ")
    .replace("(x)", "(h)")
    .replace("return x", "return h")
    .replace("(self, x)", "(self, h)")
    .replace("= x + self.bias", "= h + self.bias")
    .replace('"""Conv, then ReLU, then a bias add."""', '"""Renamed."""')
)
RESHAPED = GOOD.replace("batch_size = 128", "batch_size = 16").replace(
    "height, width = 32, 32", "height, width = 256, 128"
)
UNRELATED = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b).softmax(dim=-1).cumsum(dim=0)


M = 1024


def get_inputs():
    return [torch.randn(M, M), torch.randn(M, M)]


def get_init_inputs():
    return []
"""


def test_static_accepts_good_and_rejects_random_imports_duplicates():
    f = StaticFilter({"Dropout"})
    ok, digest = f.check(GOOD)
    assert ok.ok and digest
    assert f.check(RENAMED)[0].reason == "duplicate"
    assert f.check(RESHAPED)[0].reason == "duplicate"
    rnd = check_static(GOOD.replace("x = torch.relu(x)", "x = torch.nn.functional.dropout(x, 0.1)"))
    assert (rnd.stage, rnd.reason) == ("static", "random_op")
    rnd2 = check_static(GOOD.replace("x = torch.relu(x)", "x = x + torch.rand_like(x)"))
    assert rnd2.reason == "random_op"
    mod = check_static(
        GOOD.replace(
            "self.bias = nn.Parameter", "self.drop = nn.Dropout(0.5)\n        self.bias = nn.Parameter"
        )
    )
    assert mod.reason == "random_op"
    imp = check_static("import os\n" + GOOD)
    assert imp.reason == "disallowed_import" and "os" in imp.detail
    bad = check_static("x = 1\n")
    assert bad.reason == "invalid_task"


def test_normalised_ast_ignores_names_sizes_docstrings():
    assert ast_digest(GOOD) == ast_digest(RENAMED) == ast_digest(RESHAPED)
    assert ast_digest(GOOD) != ast_digest(UNRELATED)
    assert op_sequence(GOOD) == ["conv2d", "relu", "add"]
    assert op_sequence(UNRELATED) == ["matmul", "softmax", "cumsum"]


def test_decontamination_drops_copies_keeps_unrelated(tmp_path):
    (tmp_path / "level1").mkdir()
    (tmp_path / "level2").mkdir()
    (tmp_path / "level2" / "1_Conv2D_ReLU_BiasAdd.py").write_text(GOOD)
    (tmp_path / "level1" / "23_Softmax.py").write_text(
        UNRELATED.replace("torch.matmul(a, b).softmax(dim=-1).cumsum(dim=0)", "torch.softmax(a + b, dim=1)")
    )
    index = BenchmarkIndex.from_dir(tmp_path, DecontamConfig(ops_threshold=0.8, ast_threshold=0.7))
    assert len(index) == 2
    for copy in (RENAMED, RESHAPED):
        match = index.nearest(copy)
        assert match is not None and match.bench_path.endswith("1_Conv2D_ReLU_BiasAdd.py")
        assert "near level2/1_Conv2D_ReLU_BiasAdd.py" in match.describe()
    assert index.nearest(UNRELATED) is None
    # Same ops, different structure: only one axis is near, so it is kept.
    other = GOOD.replace("x = x + self.bias", "x = x + self.bias\n        x = x.flatten(1).sum(dim=1)")
    strict = BenchmarkIndex.from_dir(tmp_path, DecontamConfig(ops_threshold=0.99, ast_threshold=0.7))
    assert strict.nearest(other) is None
