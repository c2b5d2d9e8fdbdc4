"""What the timing stage's stand-in workers share with `WorkerHandle`: the last call's round trip."""

from __future__ import annotations

import time
from typing import Any


class RoundTrips:
    """A worker stand-in answers in `answer`; `call` times it as `WorkerHandle.last_round_trip_ms` would
    (by the test's clock: there is no reply socket to stamp)."""

    last_round_trip_ms = 0.0
    last_reply_stamped = False

    def answer(self, command: str, timeout: float, **kw: Any) -> dict[str, Any]:
        raise NotImplementedError

    def call(self, command: str, timeout: float, **kw: Any) -> dict[str, Any]:
        began = time.perf_counter()
        try:
            return self.answer(command, timeout, **kw)
        finally:
            self.last_round_trip_ms = (time.perf_counter() - began) * 1000
