"""The request path of the events family: the feed (store.contract)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Protocol

from store.events import EventPage
from store.paging import Position


class Events(Protocol):
    """The change events of every write (store/events.py), as a feed: oldest first in
    (occurredAt, id) order. Write paths record their events themselves, each backend its own
    way (docs/architecture.md, "How a write path records its events")."""

    async def page(
        self,
        workspace_id: str,
        after: Position,
        settled_before: dt.datetime,
        page_size: int,
        types: Sequence[str] | None = None,
    ) -> EventPage:
        """The events after `after` (a position in the feed; id "" stands before every event
        of its instant) of `types` (every type when None), at most `page_size`, of those that
        are final: no event recorded later can sort before them. On SQLite, whose feed order
        is its commit order, that is every committed event; on MongoDB, those that occurred
        at or before `settled_before` and before any event still being recorded. `settled`
        says up to which instant the page is final (how far a caught-up reader may move
        without an event). The same cost at any depth."""
        ...
