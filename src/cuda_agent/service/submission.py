"""A submission on the wire: its files as JSON or a tar archive, validated before anything is kept.

The judge reads only `model_new.py`, `kernels/**` and (when no task is given) `model.py` from a
submission, so only those paths are kept; anything else in an upload (a whole workspace's `utils/`,
`SKILL.md`, ...) is listed as ignored. Every path is checked, kept or not: relative, no `..`, no odd
characters, no part over NAME_MAX or path over MAX_PATH_CHARS, no duplicates, no path that is a file and
a folder at once: whatever could fail when the judgment is laid out fails here, before the 202.
Archives are decompressed through a byte budget (a gzip bomb or a huge pax header stops at the budget,
not in memory), must be whole (tar_checks.py: the end-of-archive block, no member cut short, no name
hiding text after a NUL), and only regular files and folders are allowed: a symbolic or hard link, a
device or a FIFO rejects the whole archive. File count, each file and the total are bounded.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import lzma
import re
import tarfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from cuda_agent.service import tar_checks
from cuda_agent.task import Task

KEPT_FILES = ("model.py", "model_new.py")
KEPT_FOLDER = "kernels"
_SAFE_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
NAME_MAX = 255  # one path part: what Linux file systems take (longer: ENAMETOOLONG at lay-out)
MAX_PATH_CHARS = 1024  # a whole path, well under PATH_MAX (4096) with the server's scratch folder before it
MAX_DEPTH = 16  # folders deep


class SubmissionRejected(ValueError):
    """The upload is not an acceptable submission; `status` is the HTTP status to answer with."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass(frozen=True)
class Limits:
    """Bounds on what one submission may carry (the build applies its own on kernels/ as well)."""

    max_request_bytes: int = 8 << 20  # the HTTP body, JSON or archive, before any decoding
    max_files: int = 66  # kernels/ may hold 64 (judge/build.py), plus model.py and model_new.py
    max_file_bytes: int = 4 << 20
    max_total_bytes: int = 16 << 20  # everything unpacked
    max_batch: int = 256  # submissions in one batch request
    body_timeout_s: float = 60.0  # to send a request's body: a client trickling bytes is answered 408


@dataclass(frozen=True)
class Submission:
    """Validated files (relative POSIX path -> bytes) and the task to judge them against.

    `task_source` None means the submission's own `model.py` is the task."""

    files: Mapping[str, bytes]
    task_source: str | None = None
    task_name: str | None = None
    ignored: tuple[str, ...] = field(default=(), compare=False)

    def digest(self) -> str:
        """Content identity: two uploads with this digest are the same judgment (idempotency checks)."""
        h = hashlib.sha256()
        for path in sorted(self.files):
            h.update(path.encode() + b"\0" + hashlib.sha256(self.files[path]).digest())
        h.update(b"\0task\0" + (self.task_source or "").encode() + b"\0" + (self.task_name or "").encode())
        return h.hexdigest()

    def to_blob(self) -> bytes:
        record = {
            "files": {p: base64.b64encode(b).decode() for p, b in sorted(self.files.items())},
            "task_source": self.task_source, "task_name": self.task_name,
        }  # fmt: skip
        return json.dumps(record).encode()

    @classmethod
    def from_blob(cls, blob: bytes) -> Submission:
        record = json.loads(blob)
        files = {p: base64.b64decode(b) for p, b in record["files"].items()}
        return cls(files, record.get("task_source"), record.get("task_name"))

    def write_to(self, folder: Path) -> None:
        """Lay the files out in `folder` (model.py = the task)."""
        folder.mkdir(parents=True, exist_ok=True)
        for path, data in self.files.items():
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if self.task_source is not None:
            (folder / "model.py").write_text(self.task_source, encoding="utf-8")


def check_path(name: str) -> str:
    """The normalised relative path, or SubmissionRejected naming what is wrong with it."""
    if not name or "\0" in name or "\\" in name:
        raise SubmissionRejected(f"bad file name {name!r}: use relative POSIX paths such as kernels/add.cu")
    if name.startswith("/"):
        raise SubmissionRejected(f"absolute path {name!r}: paths must be relative to the submission")
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if ".." in parts:
        raise SubmissionRejected(f"path {name!r} leaves the submission ('..'): not allowed")
    if not parts:
        raise SubmissionRejected(f"bad file name {name!r}")
    if len(name) > MAX_PATH_CHARS or len(parts) > MAX_DEPTH:
        raise SubmissionRejected(f"path {name[:80]!r}... is too long: at most {MAX_PATH_CHARS} characters and "
                                 f"{MAX_DEPTH} folders deep")  # fmt: skip
    for part in parts:
        if len(part) > NAME_MAX:
            raise SubmissionRejected(f"name {part[:80]!r}... in {name[:80]!r} is over {NAME_MAX} characters")
    for part in parts:
        if not _SAFE_PART.match(part):
            raise SubmissionRejected(
                f"bad file name {name!r}: each part must be letters, digits, '_', '.', '+' or '-'"
            )
    return "/".join(parts)


def _kept(path: str) -> bool:
    return path in KEPT_FILES or (path.startswith(KEPT_FOLDER + "/") and len(path) > len(KEPT_FOLDER) + 1)


class _Collector:
    """Accumulates files under the limits; the single place every file of an upload passes through."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.files: dict[str, bytes] = {}
        self.ignored: list[str] = []
        self.total = 0
        self.seen: set[str] = set()
        self.folders: set[str] = set()  # every folder a path implies, or an archive names

    def add_folder(self, name: str) -> None:
        path = check_path(name)
        if path in self.seen:
            raise SubmissionRejected(f"{path} is both a file and a folder in the submission")
        self._note_folders(path + "/x")

    def _note_folders(self, path: str) -> None:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if folder in self.seen:
                raise SubmissionRejected(f"{folder} is both a file and a folder in the submission")
            self.folders.add(folder)

    def add(self, name: str, data: bytes) -> None:
        path = check_path(name)
        if path in self.seen:
            raise SubmissionRejected(f"{path} appears twice in the submission")
        if path in self.folders:
            raise SubmissionRejected(f"{path} is both a file and a folder in the submission")
        self._note_folders(path)
        self.seen.add(path)
        if len(self.seen) > self.limits.max_files + 64:  # ignored files count too, beyond a margin
            raise SubmissionRejected(f"more than {self.limits.max_files + 64} files in the upload", 413)
        if not _kept(path):
            self.ignored.append(path)
            return
        if len(data) > self.limits.max_file_bytes:
            raise SubmissionRejected(f"{path} is larger than {self.limits.max_file_bytes >> 20} MiB", 413)
        self.total += len(data)
        if self.total > self.limits.max_total_bytes:
            raise SubmissionRejected(f"the submission is larger than {self.limits.max_total_bytes >> 20} MiB", 413)
        self.files[path] = data
        if len(self.files) > self.limits.max_files:
            raise SubmissionRejected(f"more than {self.limits.max_files} judged files in the submission", 413)

    def finish(self, task_source: str | None, task_name: str | None) -> Submission:
        """A missing model_new.py or a broken task is the judge's to report (a verdict, as locally);
        only a submission with no task at all cannot be judged."""
        if task_source is None and "model.py" not in self.files:
            raise SubmissionRejected("no task: send the reference as 'task' or include model.py")
        if task_source is not None:
            self.files.pop("model.py", None)  # the task given wins over the submission's own copy
        if task_name is not None:
            task_name = check_path(task_name).replace("/", "_")
        return Submission(self.files, task_source, task_name, tuple(self.ignored))


def from_json(body: Any, limits: Limits) -> Submission:
    """`{"files": {path: text}, "files_base64": {path: base64} (optional, for bytes that are not UTF-8),
    "task": model.py text (optional), "task_name": str (optional)}`."""
    if not isinstance(body, dict) or not isinstance(body.get("files"), dict):
        raise SubmissionRejected('expected a JSON object {"files": {"model_new.py": "...", ...}, "task": "..."}')
    task = body.get("task")
    if task is not None and not isinstance(task, str):
        raise SubmissionRejected("'task' must be the reference model.py as a string")
    name = body.get("task_name")
    if name is not None and not isinstance(name, str):
        raise SubmissionRejected("'task_name' must be a string")
    if task is not None and not task.isascii():
        try:
            task.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: valid JSON, but no text the judge can write
            raise SubmissionRejected(f"'task' is not valid Unicode text ({exc.reason})") from None
    encoded = body.get("files_base64", {})
    if not isinstance(encoded, dict):
        raise SubmissionRejected("'files_base64' must map paths to base64 strings")
    collector = _Collector(limits)
    for path, text in body["files"].items():
        if not isinstance(text, str):
            raise SubmissionRejected(f"files[{path!r}] must be the file's text (bytes go in files_base64)")
        try:
            collector.add(path, text.encode("utf-8"))
        except UnicodeEncodeError as exc:  # a lone surrogate ("\ud800") is valid JSON but no UTF-8 text
            raise SubmissionRejected(f"files[{path!r}] is not valid Unicode text ({exc.reason})") from None
    for path, text in encoded.items():
        try:
            data = base64.b64decode(text, validate=True) if isinstance(text, str) else None
        except ValueError:
            data = None
        if data is None:
            raise SubmissionRejected(f"files_base64[{path!r}] must be the file's bytes in base64")
        collector.add(path, data)
    return collector.finish(task, name)


class _Budget(io.RawIOBase):
    """A read-only stream that fails once more than `limit` bytes were read from it."""

    def __init__(self, inner: IO[bytes], limit: int) -> None:
        self.inner, self.limit, self.count = inner, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.inner.read(len(buffer))
        self.count += len(data)
        if self.count > self.limit:
            raise SubmissionRejected(f"the archive unpacks to more than {self.limit >> 20} MiB", 413)
        buffer[: len(data)] = data
        return len(data)


def from_archive(data: bytes, limits: Limits, task_source: str | None = None, task_name: str | None = None) -> Submission:
    """A tar archive (plain, gzip, bzip2 or xz) of the submission folder."""
    # Headers, padding and ignored members cost bytes too: a budget above the files' own bound.
    budget = _Budget(_decompressed(data), limits.max_total_bytes + (limits.max_files + 64) * 2048 + (1 << 20))
    collector = _Collector(limits)
    try:
        raw = io.BufferedReader(budget).read()  # bounded by the budget: the archive is checked whole
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as archive:
            members = []
            for member in archive:
                members.append(member)
                if member.isdir():
                    collector.add_folder(member.name)
                    continue
                if member.issym() or member.islnk():
                    raise SubmissionRejected(f"{member.name!r} is a link: archives may hold regular files only")
                if not member.isreg():
                    raise SubmissionRejected(f"{member.name!r} is a device, FIFO or other special file: not allowed")
                if member.size > limits.max_file_bytes:
                    check_path(member.name)
                    raise SubmissionRejected(f"{member.name} is larger than {limits.max_file_bytes >> 20} MiB", 413)
                if member.offset_data + member.size > len(raw):
                    break  # cut short: tar_checks says so below
                handle = archive.extractfile(member)
                collector.add(member.name, handle.read() if handle else b"")
            end = archive.offset
    except tarfile.TarError as exc:
        raise SubmissionRejected(f"not a readable tar archive: {exc}") from exc
    except (EOFError, OSError, zlib.error, lzma.LZMAError) as exc:  # cut short or corrupt compression
        raise SubmissionRejected(f"the archive is truncated or corrupt: {exc}") from exc
    problem = tar_checks.problem(raw, members, end)
    if problem:
        raise SubmissionRejected(problem)
    return collector.finish(task_source, task_name)


def _decompressed(data: bytes) -> IO[bytes]:
    """The archive's tar stream, decompressed lazily (so the budget applies to what comes out)."""
    import bz2
    import gzip

    raw = io.BytesIO(data)
    if data[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw)
    if data[:3] == b"BZh":
        return bz2.BZ2File(raw)
    if data[:6] == b"\xfd7zXZ\x00":
        return lzma.LZMAFile(raw)
    return raw


def from_folder(folder: Path, task: Task | None = None) -> Submission:
    """What a client sends for a workspace folder: model_new.py, kernels/** and the task (its source)."""
    folder = Path(folder)
    files: dict[str, bytes] = {}
    model_new = folder / "model_new.py"
    if model_new.is_file():
        files["model_new.py"] = model_new.read_bytes()
    kernels = folder / KEPT_FOLDER
    if kernels.is_dir():
        for path in sorted(kernels.rglob("*")):
            if path.is_file() and not path.is_symlink():
                files[path.relative_to(folder).as_posix()] = path.read_bytes()
    if task is None:
        own = folder / "model.py"
        if own.is_file():
            files["model.py"] = own.read_bytes()
        return Submission(files, None, folder.name)
    return Submission(files, task.source, task.name)
