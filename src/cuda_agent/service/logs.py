"""The server's logs: the service's own lines on stderr (uvicorn configures only its loggers, so job lines
were lost), and no token in any line.

uvicorn's access log writes each request's path with its query string, so a client that put its token in
the URL (`?token=...`) had it logged. `RedactQuery` keeps the names of query parameters and the values of
the few that carry no secret (`SAFE_QUERY`), and replaces every other value.
"""

from __future__ import annotations

import logging
import re
import sys

SAFE_QUERY = frozenset({"wait", "task_name"})  # values worth seeing in a log, never a credential
_PARAM = re.compile(r"([?&])([^=&#]*)=([^&#]*)")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def redact_query(path: str) -> str:
    """`path` with the value of every query parameter outside SAFE_QUERY replaced by `***`."""
    return _PARAM.sub(
        lambda m: m.group(0) if m.group(2) in SAFE_QUERY else f"{m.group(1)}{m.group(2)}=***", path
    )


class RedactQuery(logging.Filter):
    """On uvicorn's access logger: its record's arguments are (client, method, path, version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) >= 3 and isinstance(record.args[2], str):
            record.args = (*record.args[:2], redact_query(record.args[2]), *record.args[3:])
        return True


def configure() -> None:
    """Call after uvicorn has configured its loggers (uvicorn.Config does, when it is made)."""
    logging.getLogger("uvicorn.access").addFilter(RedactQuery())
    service = logging.getLogger("cuda_agent.service")
    if not service.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
        service.addHandler(handler)
    service.setLevel(logging.INFO)
    service.propagate = False
