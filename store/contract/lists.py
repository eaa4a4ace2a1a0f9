"""The request path of the lists family (store.contract)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from typing import Protocol

from store.exports import Batch
from store.idempotency import IdempotentWrite
from store.lists import Removal
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

    async def update(
        self, workspace_id: str, list_id: str, fields: dict
    ) -> tuple[dict, bool] | None:
        """Set the list's `name` and/or `ownerUserId` (store/lists.py): the list and whether it
        changed (only then its updatedAt moves and `list.updated` is recorded); None when the
        workspace has no such list."""
        ...

    async def remove_members(
        self,
        workspace_id: str,
        listing: dict,
        prospect_ids: list[str],
        once: IdempotentWrite | None = None,
    ) -> Removal:
        """Take the prospects of `prospect_ids` that are members out of `listing` (a list
        record): their memberships and the list in their `listIds` go (their updatedAt moves),
        each gets a `list_removed` activity, the list's prospectsCount and updatedAt move, and
        the events `prospect.updated`, `activity.created` and `list.updated` are recorded. Any
        other id is `not_member`. One transaction on SQLite; on MongoDB a unit of work recorded
        first and finished by the list purge after a crash. With an Idempotency-Key (`once`)
        its response is stored."""
        ...

    async def delete(self, workspace_id: str, list_id: str) -> bool | None:
        """Delete the list: it becomes a tombstone (store/tombstones.py), gone from every
        ordinary read at once, `list.deleted` is recorded, and its members are left to lose it
        by `purge`. True; False when it was deleted already; None when the workspace has no
        such list."""
        ...

    async def purge(self, batch: int) -> int:
        """One bounded unit of the lists' background work, of any workspace: up to `batch`
        members of a deleted list lose it from `listIds` (updatedAt, `prospect.updated`), or a
        purge with no member left is closed, or (MongoDB) a removal whose writer died is
        finished. How much it did; 0 when nothing is waiting."""
        ...

    async def set_count(self, workspace_id: str, list_id: str, members: int) -> dict | None:
        """Record the list's counted number of prospects (the larger count wins) and move its
        updatedAt; the list's record, or None."""
        ...
