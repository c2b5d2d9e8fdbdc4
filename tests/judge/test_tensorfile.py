"""The judge's tensor files: exact round trips (strides, dtypes, scalars) and refusal of bad files."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from cuda_agent.judge.common import tensorfile


def test_round_trip_keeps_values_strides_and_structure(tmp_path: Path) -> None:
    base = torch.randn(6, 8)
    items = [
        base,
        base.t(),  # transposed view: strides kept
        base[1:5:2, 3:],  # offset and step
        torch.tensor(3.5),  # 0-d
        torch.empty(0, 4),
        torch.rand(5) > 0.5,
        torch.randn(4, 4).to(torch.bfloat16),
        torch.arange(10, dtype=torch.int64),
        7,
        2.5,
        None,
        (torch.ones(2), "x"),
    ]
    path = tmp_path / "t.bin"
    tensorfile.save(items, path)
    for trusted in (True, False):
        back = tensorfile.load(path, device="cpu", trusted=trusted)
        assert isinstance(back, list) and len(back) == len(items)
        for got, want in zip(back, items, strict=True):
            if isinstance(want, torch.Tensor):
                assert got.dtype == want.dtype and got.shape == want.shape and got.stride() == want.stride()
                assert torch.equal(got, want)
            elif isinstance(want, tuple):
                assert isinstance(got, tuple) and torch.equal(got[0], want[0]) and got[1] == want[1]
            else:
                assert got == want


def test_loaded_tensors_do_not_depend_on_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.bin"
    tensorfile.save([torch.arange(4.0)], path)
    (back,) = tensorfile.load(path, device="cpu")
    path.unlink()
    assert back.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("damage", ["magic", "truncate", "header", "view"])
def test_untrusted_files_that_lie_are_refused(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "t.bin"
    tensorfile.save([torch.randn(64, 64)], path)
    data = bytearray(path.read_bytes())
    if damage == "magic":
        data[:8] = b"PICKLE!!"
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "header":
        data[20:40] = b"}" * 20
    else:  # claim a view far larger than the data behind it
        text = bytes(data).replace(b"[64, 64]", b"[64, 99]", 1)
        data = bytearray(text)
    path.write_bytes(bytes(data))
    with pytest.raises(tensorfile.TensorFileError):
        tensorfile.load(path, device="cpu", trusted=False)
