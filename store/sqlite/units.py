"""Write units of a bounded length for a long run of calls recorded line by line (the import's
`Calls.record(partial=True)`).

Every writer of the file waits for the unit under way: the writers of other processes (a
`serve` beside the import) take their turn only between two units (turns.py). A batch of the
import is therefore written as several units, each about UNIT_SECONDS long. How many calls
fit in that time depends on the file (a million calls deep a unit writes each call's index
entries on pages that are not in the cache any more), so the size is learned from the units
written: the writer thread notes when each unit started, and since a batch's units are queued
back to back, the time between two starts is the earlier unit's length, commit included.

Each call of a partial write is written whole or not at all, on its own: splitting a batch
changes which calls commit together, never what a call is.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

UNIT_SECONDS = 0.08  # the length a unit is sized for (a write of another process waits for it)
FEWEST = 100  # calls a unit holds at least (a unit's own statements and commit are its floor)
MOST = 5000  # and at most (the import's batch)
FIRST = 200  # the size of the first units, before any was timed (short: a guess too large
# makes a writer of another process wait for a whole batch of long units)


def timed(conn: Any, fn: Callable[..., T], *args: Any) -> tuple[float, T]:
    """On the writer thread, inside the unit: `fn(conn, *args)` and when it started."""
    return time.monotonic(), fn(conn, *args)


class UnitSize:
    """How many calls a unit holds, learned from the units written (see the module)."""

    def __init__(self, first: int = FIRST) -> None:
        self.size = first

    def spans(self, count: int) -> list[tuple[int, int]]:
        """`count` calls as [start, end) spans of about `size` calls, of even sizes."""
        units = max(1, round(count / self.size))
        step = -(-count // units)
        return [(start, min(start + step, count)) for start in range(0, count, step)]

    def learn(self, starts: list[float], spans: list[tuple[int, int]]) -> None:
        """The units of `spans` started at `starts` (back to back, so each but the last has a
        length): the next units hold as many calls as UNIT_SECONDS took per call here."""
        per_call = [
            (later - start) / (end - first)
            for start, later, (first, end) in zip(starts, starts[1:], spans, strict=False)
            if later > start
        ]
        if not per_call:
            return
        fits = UNIT_SECONDS / statistics.median(per_call)
        # From three units on, the median is what one slow unit (a checkpoint, another writer)
        # does not move: the size goes there at once; from fewer, half way there.
        goal = fits if len(per_call) >= 3 else (self.size + fits) / 2
        self.size = int(min(MOST, max(FEWEST, goal)))
