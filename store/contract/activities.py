"""The request path of the activities family (store.contract)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from typing import Protocol

from store.exports import Batch
from store.idempotency import IdempotentWrite
from store.ingest import Logged, NewActivity


class Activities(Protocol):
    """Prospect activities: bulk inserts, logging, and the timeline, newest first."""

    async def log(
        self,
        workspace_id: str,
        activities: list[NewActivity],
        ids: list[str] | None = None,
        once: IdempotentWrite | None = None,
        partial: bool = False,
    ) -> list[Logged]:
        """Log activities (validated input) on their prospects' timelines, with the ids
        `ids` (else ids derived from `once`, else new ones); an id written before is
        `existing`. References are checked (store.ingest.activity_refusal); all or nothing
        unless `partial`, as Calls.record."""
        ...

    def timeline(
        self, workspace_id: str, prospect_id: str, batch_size: int = 500
    ) -> AsyncGenerator[list[dict], None]:
        """A prospect's activities as records, newest first, in batches of `batch_size`; memory
        stays bounded whatever the timeline's length. Close it (contextlib.aclosing) when
        stopping early."""
        ...

    def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = ...,
        stored_since: dt.datetime | None = None,
    ) -> AsyncGenerator[Batch, None]:
        """Every activity of the workspace stored at or before `settled_before` (and at or
        after `stored_since`), in the order they were stored (storedAt, then id), as
        store.activities.export_record shows them, in batches (see Lists.export)."""
        ...
