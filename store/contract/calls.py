"""The request path of the calls family (store.contract)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from typing import Protocol

from store.exports import Batch
from store.idempotency import IdempotentWrite
from store.ingest import NewCall, Recorded
from store.paging import Page, Window


class Calls(Protocol):
    """Finished calls (store/calls.py), the dialer's writes of them (store/ingest.py) and the
    recording reference of a call."""

    async def get(self, workspace_id: str, call_id: str) -> dict | None:
        """The call's record, or None."""
        ...

    async def record(
        self,
        workspace_id: str,
        calls: list[NewCall],
        once: IdempotentWrite | None = None,
        partial: bool = False,
    ) -> list[Recorded]:
        """Record finished calls (validated, normalised input) with everything they imply:
        references checked, contacts matched or created (the upload's rules), calls of a
        provider SID recorded once (`existing` for the same content; `call_exists` for other
        content), timeline entries, the call total and the dialer metrics. All or nothing (one
        transaction on SQLite; an idempotent sequence on MongoDB): the first refusal raises
        store.ingest.Refused and nothing is written. With `partial` (the import) refused calls
        are left out, each with its refusal, and the others recorded. With an Idempotency-Key
        (`once`) the write is idempotent on it and stores its response."""
        ...

    async def change(self, workspace_id: str, call_id: str, changes: dict) -> dict | None:
        """Change a call's store.ingest.CHANGEABLE fields: updatedAt moves (never backwards),
        the timeline entry and the dialer metrics follow; a change that changes nothing writes
        nothing. The call's record, or None when the workspace has no such call."""
        ...

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        encoded: bool = False,
        user_id: str | None = None,
        prospect_id: str | None = None,
        list_id: str | None = None,
        direction: str | None = None,
        disposition: str | None = None,
        created_from: dt.datetime | None = None,
        created_to: dt.datetime | None = None,
        updated_since: dt.datetime | None = None,
    ) -> Page:
        """One window of calls: equality filters, createdAt in [from, to), updatedAt >= since."""
        ...

    def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = ...,
        user_id: str | None = None,
        prospect_id: str | None = None,
        list_id: str | None = None,
        direction: str | None = None,
        disposition: str | None = None,
        created_from: dt.datetime | None = None,
        created_to: dt.datetime | None = None,
        updated_since: dt.datetime | None = None,
    ) -> AsyncGenerator[Batch, None]:
        """Every call `page`'s filters select that was last changed at or before
        `settled_before`, in the sync order, in batches (see Lists.export)."""
        ...

    async def recording_ref(self, workspace_id: str, call_id: str) -> str | None:
        """The provider's reference of the call's recording, or None (no such call in this
        workspace, or no recording). Never part of a record."""
        ...
