"""Slow and half-open connections cannot hold the judge server: uvicorn's HTTP/1.1 protocol with a deadline
for each request's head and a bound on the connections waiting for one.

uvicorn closes a kept-alive connection after `timeout_keep_alive` of silence, but any byte resets that,
and a new connection has no deadline at all: 300 clients sending their headers a byte at a time were all
held open. Here a connection that is waiting for a request head (new, or kept alive after a response)
must deliver the whole head within `header_timeout_s`, else it is closed; and at most `max_half_open`
connections may wait at once: one more closes the one that has waited longest. A real client sends its
head in one packet, so it leaves the waiting set at once and is answered while slow ones come and go.
A body is bounded by the app (Limits.body_timeout_s, 408), once the route reads it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


def guarded_protocol(header_timeout_s: float, max_half_open: int) -> type[H11Protocol]:
    """An H11Protocol class for `uvicorn.Config(http=...)`, with its own set of waiting connections."""
    waiting: OrderedDict[Any, None] = OrderedDict()  # connections waiting for a request head, oldest first

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
            super().connection_made(transport)  # type: ignore[arg-type]
            self._await_head()

        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before:  # a request head arrived: it is being answered now
                self._head_received()

        def on_response_complete(self) -> None:
            self._await_head()  # before the base class, which may start a pipelined request at once
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_received()
            super().connection_lost(exc)

        def _await_head(self) -> None:
            self._head_received()
            self._deadline = self.loop.call_later(header_timeout_s, self._drop)
            waiting[self] = None
            while len(waiting) > max_half_open:
                oldest, _ = waiting.popitem(last=False)
                oldest._drop()

        def _head_received(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            waiting.pop(self, None)

        def _drop(self) -> None:
            self._head_received()
            if self.transport is not None and not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
