"""`BuiltQueue`: built judgments waiting for a GPU lane, taken in order but for those a lane cannot take now.

At depth 1 a lane takes the oldest. At depth 2 (trusted/lane_share.py) two judgments of one task cannot be
in flight on one GPU (one reference worker answers one judgment at a time), so a lane takes the oldest
judgment of a task not in flight there: an RL batch arrives as groups of one task, and a plain queue would
hand the second lane the first one's task and leave it waiting.

Trust boundary: runs in the parent between the judge's threads; it holds judgments, never candidate code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

Item = TypeVar("Item")
POLL_S = 0.05  # how often a waiting lane looks again (a task leaves flight without telling this queue)


class BuiltQueue(Generic[Item]):
    def __init__(self) -> None:
        self._items: list[Item] = []
        self._changed = threading.Condition()

    def put(self, item: Item) -> None:
        with self._changed:
            self._items.append(item)
            self._changed.notify_all()

    def get(self, takes: Callable[[Item], bool] = lambda _: True) -> Item:
        """The oldest item `takes` accepts, waiting until there is one."""
        with self._changed:
            while True:
                for index, item in enumerate(self._items):
                    if takes(item):
                        return self._items.pop(index)
                self._changed.wait(POLL_S)

    def drain(self) -> list[Item]:
        """Every item still waiting, removed (a batch that ended early cleans them up)."""
        with self._changed:
            items, self._items = self._items, []
            return items
