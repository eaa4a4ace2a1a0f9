"""Paging, backend-neutral: the page a store returns, the two orders, and keyset positions.

Two ways through a paginated resource:
- page numbers (`page`, `pageSize`): an offset, with the total count; what the spec requires;
- keyset (`after`): the records strictly after a position in the order, with no count and a
  cost per page that does not depend on depth. Cursors (store.cursors) carry a position.

Orders (`sort`): "-createdAt", newest first with ties by id descending, and "updatedAt", least
recently changed first with ties by id ascending (the sync order); and the events feed's own,
"occurredAt", oldest first with ties by id ascending (store/events.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt

# Past this offset a database's skip would overflow; such a page is empty by definition.
MAX_SKIP = 2**62
SORTS = {
    "-createdAt": ("createdAt", False),
    "updatedAt": ("updatedAt", True),
    "occurredAt": ("occurredAt", True),
    "-requestedAt": ("requestedAt", False),  # erasure requests, newest first
}
DEFAULT_SORT = "-createdAt"


@dataclasses.dataclass(frozen=True)
class Position:
    """A place in an order: the sort field's value and the id of the record there."""

    value: dt.datetime
    id: str


@dataclasses.dataclass(frozen=True)
class Window:
    """Which slice of an order to read: page `page` (1-based, with a total count), or the
    records after `after` (keyset; `after` None is the very start) when `page` is None.
    `settled_before` keeps only records last changed before that instant (the sync order)."""

    page_size: int
    page: int | None = 1
    sort: str = DEFAULT_SORT
    after: Position | None = None
    settled_before: dt.datetime | None = None

    @property
    def field(self) -> str:
        return SORTS[self.sort][0]

    @property
    def ascending(self) -> bool:
        return SORTS[self.sort][1]


class RawJSON:
    """Records already encoded as one JSON array (`text`, UTF-8), as the SQLite store builds
    them; the API's encoder (handlers.jsonio) writes them into the response as they are."""

    __slots__ = ("text",)

    def __init__(self, text: bytes):
        self.text = text


@dataclasses.dataclass
class Page:
    items: list[dict] | RawJSON  # RawJSON only when asked for (`encoded=True`)
    total: int | None  # None in keyset mode: no count is made
    page: int | None
    page_size: int
    has_more: bool
    sort: str = DEFAULT_SORT
    end: Position | None = None  # the last record's position, when items are RawJSON

    @property
    def last(self) -> Position | None:
        """The position of the page's last record, where the next page starts."""
        if isinstance(self.items, RawJSON) or not self.items:
            return self.end
        field = SORTS[self.sort][0]
        return Position(self.items[-1][field], self.items[-1]["id"])
