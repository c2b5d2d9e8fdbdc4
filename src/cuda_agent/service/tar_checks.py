"""Checks on a tar archive's raw bytes that `tarfile` does not make: that the archive is whole, and that
no name hides text after a NUL.

`tarfile` ends an archive quietly wherever its bytes run out (a download cut at a block boundary reads
as a smaller, valid archive), and it cuts a name at its first NUL (`model_new.py\\0evil` reads as
`model_new.py`, where another tool may read the whole field). Both would let a server accept something
other than what was sent, so the server refuses them with a reason before it answers 202.
"""

from __future__ import annotations

import tarfile

BLOCK = 512
ZERO_BLOCK = bytes(BLOCK)
# (start, end) of the NUL-terminated text fields of a ustar header block: name, linkname; the POSIX
# prefix field only where the magic says POSIX ustar (GNU keeps times there).
_TEXT_FIELDS = ((0, 100), (157, 257))
_PREFIX = (345, 500)
_EXTENDED = (b"x", b"g")  # pax headers: records of text, never a NUL
_GNU_LONG = (b"L", b"K")  # GNU long name / long link name: the text, then NUL padding


def problem(raw: bytes, members: list[tarfile.TarInfo], end: int) -> str | None:
    """What is wrong with the archive `raw` (its members as tarfile read them, `end` the offset where
    tarfile looked for the next header), or None."""
    for member in members:
        if member.offset_data + member.size > len(raw):
            return (
                f"the archive is truncated: {member.name!r} has {member.size} bytes, the archive ends before"
            )
        found = _hidden_nul(raw, member.offset, member.offset_data)
        if found:
            return f"a name in the archive hides text after a NUL byte ({found!r}): not allowed"
    if raw[end : end + BLOCK] != ZERO_BLOCK:
        return "the archive is truncated: it stops without the end-of-archive zero block"
    return None


def _hidden_nul(raw: bytes, start: int, stop: int) -> bytes | None:
    """The first header text with a NUL followed by more text, among the header blocks in raw[start:stop]
    (a member's own header and the pax or GNU headers before it)."""
    position = start
    while position + BLOCK <= stop:
        block = raw[position : position + BLOCK]
        fields = [*_TEXT_FIELDS, _PREFIX] if block[257:263] == b"ustar\x00" else list(_TEXT_FIELDS)
        for first, last in fields:
            if _after_nul(block[first:last]):
                return block[first:last].rstrip(b"\0")
        kind = block[156:157]
        if kind in _EXTENDED + _GNU_LONG:
            try:
                size = tarfile.nti(block[124:136])
            except tarfile.InvalidHeaderError:
                return block[124:136]
            data = raw[position + BLOCK : position + BLOCK + size]
            if (kind in _EXTENDED and b"\0" in data) or (kind in _GNU_LONG and _after_nul(data)):
                return data[:200].rstrip(b"\0")
            position += BLOCK + -(-size // BLOCK) * BLOCK
        else:
            position += BLOCK
    return None


def _after_nul(field: bytes) -> bool:
    cut = field.find(b"\0")
    return cut >= 0 and bool(field[cut:].strip(b"\0"))
