"""Uploads that cannot be judged as sent are refused with 400 and a reason before the server answers 202:
names the scratch folder cannot hold, a path that is a file and a folder at once, a truncated or corrupt
archive, a name hiding text after a NUL, JSON too deep or with lone surrogates, and one idempotency key
used twice in a batch for different content (409). Each was accepted (then judge_error) or a 500."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest

from tests.service.helpers import MODEL_NEW, TASK, Server, instant

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    srv = Server(tmp_path_factory.mktemp("uploads"), "--max-pending", "8")
    yield srv
    srv.stop()


def _tar(files: dict[str, bytes], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


BASE = {"model.py": TASK.encode(), "model_new.py": MODEL_NEW.encode()}


def _hide_after_nul(data: bytes, member: str, hidden: bytes) -> bytes:
    """The archive with `member`'s own ustar name field reading `member NUL hidden` (checksum fixed)."""
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        header = archive.getmember(member).offset_data - 512
    raw = bytearray(data)
    field = (member.encode() + b"\0" + hidden).ljust(100, b"\0")
    raw[header : header + 100] = field
    block = raw[header : header + 512]
    block[148:156] = b" " * 8
    raw[header + 148 : header + 156] = b"%06o\0 " % sum(block)
    return bytes(raw)


def _pax_member_with_hidden_name() -> bytes:
    """A pax archive whose model_new.py carries a pax path record, its ustar name hiding `evil`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in BASE.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.pax_headers = {"path": name, "comment": "made by a test"}
            archive.addfile(info, io.BytesIO(data))
    return _hide_after_nul(buffer.getvalue(), "model_new.py", b"evil")


WHOLE = _tar(BASE)


def _cut_after_members(data: bytes) -> bytes:
    """The archive up to the end of its last member's data (block-aligned): no end-of-archive block."""
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        last = archive.getmembers()[-1]
    return data[: last.offset_data + -(-last.size // 512) * 512]


ARCHIVES = {
    "over-long name": (_tar({**BASE, "kernels/" + "a" * 300 + ".cu": b"x"}), "over 255"),
    "file and folder clash": (
        _tar({**BASE, "kernels/a.cu": b"x", "kernels/a.cu/b.cuh": b"y"}),
        "file and a folder",
    ),
    "truncated at a block boundary": (_cut_after_members(WHOLE), "truncated"),
    "truncated inside a file": (_cut_after_members(WHOLE)[:-700], "truncated"),
    "NUL in a ustar name": (
        _hide_after_nul(_tar(BASE, tarfile.USTAR_FORMAT), "model_new.py", b"evil"),
        "nul",
    ),
    "NUL in a pax member's name": (_pax_member_with_hidden_name(), "nul"),
    "corrupt gzip": (gzip.compress(WHOLE)[:40] + b"\xff" * 40 + gzip.compress(WHOLE)[80:], "corrupt"),
}


@pytest.mark.parametrize("case", sorted(ARCHIVES))
def test_an_archive_that_cannot_be_judged_as_sent_is_refused_before_202(server: Server, case: str) -> None:
    data, words = ARCHIVES[case]
    response = server.http.post("/judgments", content=data, headers={"Content-Type": "application/x-tar"})
    assert response.status_code == 400, response.text
    assert words in response.json()["error"].lower()


def test_the_whole_archive_is_still_accepted(server: Server) -> None:
    response = server.http.post("/judgments", content=WHOLE, headers={"Content-Type": "application/x-tar"})
    assert response.status_code == 202, response.text


JSON_BODIES = {
    "over-long name": (b'{"files": {"kernels/' + b"b" * 300 + b'.cu": "x", "model_new.py": "x"}, "task": "t"}', "over"),
    "deep folders": (b'{"files": {"kernels/' + b"d/" * 40 + b'k.cu": "x"}, "task": "t"}', "too long"),
    "file and folder clash": (b'{"files": {"kernels/k": "x", "kernels/k/a.cu": "y"}, "task": "t"}', "file and a folder"),
    "deeply nested JSON": (b"[" * 100_000 + b"]" * 100_000, "nested"),
    "lone surrogate in a file": (b'{"files": {"model_new.py": "\\ud800"}, "task": "t"}', "unicode"),
    "lone surrogate in the task": (b'{"files": {"model_new.py": "x"}, "task": "\\udfff"}', "unicode"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(JSON_BODIES))
def test_json_a_judge_cannot_take_is_a_400(server: Server, case: str) -> None:
    body, words = JSON_BODIES[case]
    response = server.http.post("/judgments", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert words in response.json()["error"].lower()


def test_a_batch_key_with_a_lone_surrogate_is_a_400(server: Server) -> None:
    body = (
        b'{"submissions": [{"files": {"model_new.py": "x"}, "task": "t (", "idempotency_key": "k\\ud800"}]}'
    )
    response = server.http.post("/batches", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and "submissions[0]" in response.json()["error"], response.text


def test_one_key_twice_in_a_batch_for_different_content_is_a_409(server: Server) -> None:
    items = [{**instant(900), "idempotency_key": "twice"}, {**instant(901), "idempotency_key": "twice"}]
    response = server.http.post("/batches", json={"submissions": items})
    assert response.status_code == 409, response.text
    same = server.http.post("/batches", json={"submissions": [items[0], items[0]]})
    assert same.status_code == 202 and len({j["id"] for j in same.json()["judgments"]}) == 1
