"""The request path of the lists family (store.contract)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from typing import Protocol

from store.exports import Batch
from store.idempotency import IdempotentWrite
from store.paging import Page, Window


class Lists(Protocol):
    """Dialer lists, with their prospectsCount."""

    async def create(
        self,
        workspace_id: str,
        name: str,
        owner_user_id: str,
        source: str = "CSV",
        created_at: dt.datetime | None = None,
        list_id: str | None = None,
        once: IdempotentWrite | None = None,
    ) -> dict:
        """Insert a list; its record. With an Idempotency-Key (`once`) the write is idempotent
        on it (store/idempotency.py) and stores its response."""
        ...

    async def get(self, workspace_id: str, list_id: str) -> dict | None:
        """The list, or None. On MongoDB a list an interrupted upload left marked gets its
        prospectsCount counted again first."""
        ...

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        updated_since: dt.datetime | None = None,
        encoded: bool = False,
        include_deleted: bool = False,
    ) -> Page:
        """One window of lists (updatedAt >= `updated_since` when given); with
        `include_deleted`, deleted lists too, as tombstones (store/tombstones.py). With
        `encoded` a backend may return the records as one JSON array (store.paging.RawJSON);
        without it they are dicts."""
        ...

    def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = ...,
        updated_since: dt.datetime | None = None,
    ) -> AsyncGenerator[Batch, None]:
        """Every list last changed at or before `settled_before` (the export's horizon), in
        the sync order (updatedAt, then id), in batches of at most `batch_size` records
        (store/exports.py); memory stays bounded whatever the number. Close it
        (contextlib.aclosing) when stopping early."""
        ...

    async def set_count(self, workspace_id: str, list_id: str, members: int) -> dict | None:
        """Record the list's counted number of prospects (the larger count wins) and move its
        updatedAt; the list's record, or None."""
        ...
