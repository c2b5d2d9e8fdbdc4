"""The judge's tensor files: exact round trips (strides, dtypes, scalars) and refusal of bad files."""

from __future__ import annotations

import os
import threading
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


def _load_within(path: Path, seconds: float, max_bytes: int | None = None) -> BaseException | object:
    """`load(trusted=False)` in a thread: what it returned or raised, or TimeoutError if it blocked."""
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(tensorfile.load(path, device="cpu", trusted=False, max_bytes=max_bytes))
        except BaseException as exc:  # the outcome, whatever it is, is what the test looks at
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return outcome[0] if outcome else TimeoutError(f"load blocked for {seconds} s")


@pytest.mark.parametrize("kind", ["fifo", "link to a tensor file", "link to /dev/zero", "directory"])
def test_an_untrusted_path_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    """A candidate hands its outputs over at a path it can write. A FIFO there would block the reference
    worker's read until its call's limit, and a link to /dev/zero would feed it until memory ran out: both
    end as the reference failing, a task_error, which training does not count against the candidate. Each
    must be refused at once as an unreadable output, which is the candidate's wrong answer."""
    real = tmp_path / "real.tensors"
    tensorfile.save([torch.randn(8)], real)
    path = tmp_path / "out.tensors"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(real if kind == "link to a tensor file" else Path("/dev/zero"))
    outcome = _load_within(path, 5.0)
    assert isinstance(outcome, tensorfile.TensorFileError), outcome
    assert "regular file" in str(outcome) or "cannot open" in str(outcome)


def test_an_untrusted_file_past_its_bound_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "out.tensors"
    tensorfile.save([torch.randn(1000)], path)
    size = path.stat().st_size
    back = _load_within(path, 5.0, max_bytes=size)
    assert isinstance(back, list) and back[0].shape == (1000,), back  # at the bound: read
    outcome = _load_within(path, 5.0, max_bytes=size - 1)
    assert isinstance(outcome, tensorfile.TensorFileError) and f"{size} bytes" in str(outcome)
    sparse = tmp_path / "sparse.tensors"
    with open(sparse, "wb") as handle:  # 64 GiB that take no disk: refused by its size, never read
        handle.truncate(64 << 30)
    outcome = _load_within(sparse, 5.0, max_bytes=1 << 20)
    assert isinstance(outcome, tensorfile.TensorFileError) and "more than" in str(outcome)


def test_an_honest_view_of_a_large_buffer_is_handed_over_within_the_readers_bound(tmp_path: Path) -> None:
    """A column or a diagonal of a 1024^2 result reaches 4 MiB of storage for 4 KiB of values. The file keeps
    a view's whole span, and the reference reads at most about twice the expected outputs (`read_untrusted`):
    an honest output like this was refused as unreadable. `handed` sends it as its values; dense views keep
    their strides, and a view that overlaps itself is left for the layout rule."""
    big = torch.randn(1024, 1024)
    bound = 2 * 1024 * 4 + 4096  # what the reference allows for one 1024-element float32 output, and a header
    for view in (big[:, 0], big.diagonal(), big[::2, ::512].t()):
        path = tmp_path / "out.tensors"
        tensorfile.save([tensorfile.handed(view)], path)
        (back,) = _load_within(path, 5.0, max_bytes=bound + view.numel() * 4)
        assert torch.equal(back, view) and path.stat().st_size <= bound + view.numel() * 4
    dense = big.t()
    assert tensorfile.handed(dense).stride() == dense.stride(), "a transpose keeps its layout"
    expanded = torch.randn(1, 8).expand(8, 8)
    assert tensorfile.handed(expanded).stride() == (0, 1), "an expand is kept for the layout rule to refuse"
    odd = torch.as_strided(torch.randn(64), (3, 2), (2, 4))  # element 4 twice, yet reaches past its elements
    assert tensorfile.handed(odd).stride() == (2, 4)
