"""Calls on SQLite: the paginated, filtered call log, one call, the recording reference of a
call, the dialer's writes (recording calls, changing one: store/sqlite/ingest.py), and the
recording retention sweep's claims (store/sqlite/retention.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, Unpack

from store.activities import check_scope
from store.calls import INSERT_BATCH, CallFields, call_document
from store.calls import record as call_record
from store.exports import BATCH_SIZE, Lines
from store.idempotency import IdempotentWrite
from store.ingest import NewCall, Recorded
from store.paging import Page, Window
from store.prospects import Contact
from store.retention import DueRecording
from store.sqlite.callrows import ENCODED, FIELDS, SELECT, prepare, write_calls
from store.sqlite.engine import Engine
from store.sqlite.exports import export_batches
from store.sqlite.idempotency import write_once
from store.sqlite.ingest import change_call, make_ahead, record_calls
from store.sqlite.paging import page_query, quick
from store.sqlite.retention import claim_due, forget, postpone
from store.sqlite.schema import ms, to_doc
from store.sqlite.units import FEWEST, UnitSize, timed

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

EVENT_SOURCE = ("calls", "", ENCODED)  # a call's event data: its stored record (events.py)

EQUALITY = {
    "user_id": "userId",
    "prospect_id": "prospectId",
    "list_id": "listId",
    "direction": "direction",
    "disposition": "disposition",
}


def call_where(
    workspace_id: str,
    *,
    created_from: dt.datetime | None = None,
    created_to: dt.datetime | None = None,
    updated_since: dt.datetime | None = None,
    **equal: str | None,
) -> tuple[list[str], list]:
    """The WHERE of GET /calls: equality filters, createdAt in [from, to), updatedAt >= since."""
    where: list[str] = ["workspaceId = ?"]
    params: list = [workspace_id]
    for name, value in equal.items():
        if value is not None:
            where.append(f"{EQUALITY[name]} = ?")
            params.append(value)
    for clause, bound in (
        ("createdAt >= ?", created_from),
        ("createdAt < ?", created_to),
        ("updatedAt >= ?", updated_since),
    ):
        if bound is not None:
            where.append(clause)
            params.append(ms(bound))
    return where, params


RECORD_TIMEOUT = 10.0  # the longest wait for a recording's turn at the write lock
AHEAD_FROM = 100  # calls from which a batch's rows are made on a worker thread first


class Calls:
    def __init__(self, engine: Engine, events: EventWriter, default_region: str = "US") -> None:
        self.engine = engine
        self.events = events
        self.default_region = default_region
        self.unit_size = UnitSize()  # of the units a partial record is written in

    async def get(self, workspace_id: str, call_id: str) -> dict | None:
        """The call's record, or None."""

        def get(conn: sqlite3.Connection) -> dict | None:
            row = conn.execute(
                f'{SELECT} WHERE "_id" = ? AND workspaceId = ?', (call_id, workspace_id)
            ).fetchone()
            return row and call_record(to_doc(row))

        return await self.engine.read(get, quick=True)

    async def record(
        self,
        workspace_id: str,
        calls: list[NewCall],
        once: IdempotentWrite | None = None,
        partial: bool = False,
    ) -> list[Recorded]:
        """Record finished calls in one transaction (store/sqlite/ingest.py). A large batch
        has its rows made on a worker thread first, so that the write unit, which every writer
        of the file waits for, holds little more than the statements. A `partial` batch of
        more than FEWEST calls (the import's) is written as units of a bounded length instead
        (_record_in_units), each call whole or not at all."""
        if partial and once is None and len(calls) > FEWEST:
            return await self._record_in_units(workspace_id, calls)
        contacts = self._contacts(calls)
        made = None
        if len(calls) >= AHEAD_FROM:
            made = await asyncio.to_thread(make_ahead, workspace_id, calls, once)
        return await write_once(
            self.engine,
            once,
            record_calls,
            workspace_id,
            calls,
            contacts,
            once,
            partial,
            self.events,
            made,
            timeout=RECORD_TIMEOUT if not partial else 600,
        )

    def _contacts(self, calls: list[NewCall]) -> list[Contact | None]:
        return [
            Contact.parse(call.contact, self.default_region) if call.contact else None
            for call in calls
        ]

    async def _record_in_units(self, workspace_id: str, calls: list[NewCall]) -> list[Recorded]:
        """`record(partial=True)` of many calls (the import's batch) as several write units of
        a bounded length, queued back to back (store/sqlite/units.py): a writer of another
        process waits for one of them, not for the batch. Each unit's rows are made just
        before it is queued, while no unit runs its statements (Engine.statements_done): made
        beside a unit, they took the GIL from the writer for most of that unit's length,
        which every writer of the file then waited for (docs/performance.md)."""
        spans = self.unit_size.spans(len(calls))
        writes: list[asyncio.Future[tuple[float, list[Recorded]]]] = []
        for a, b in spans:
            await self.engine.statements_done()
            part = calls[a:b]
            contacts, ahead = self._contacts(part), make_ahead(workspace_id, part, None)
            unit = self.engine.write(
                timed,
                record_calls,
                workspace_id,
                part,
                contacts,
                None,
                True,
                self.events,
                ahead,
                timeout=600,
            )
            writes.append(asyncio.ensure_future(unit))
            await asyncio.sleep(0)  # queued: the writer takes it once the unit before commits
        written = await asyncio.gather(*writes)
        self.unit_size.learn([started for started, _ in written], spans)
        return [one for _, recorded in written for one in recorded]

    async def change(self, workspace_id: str, call_id: str, changes: dict) -> dict | None:
        """Change a call (store.ingest.CHANGEABLE fields) in one transaction; its record, or
        None when the workspace has no such call."""
        return await self.engine.write(change_call, workspace_id, call_id, changes, self.events)

    async def create(self, workspace_id: str, **fields: Unpack[CallFields]) -> dict:
        """Record one finished call (`call_document` arguments); returns its API record."""
        doc = call_document(workspace_id, **fields)
        await self.engine.write(write_calls, workspace_id, prepare([doc]), self.events)
        return call_record(doc)

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt call documents, each with its `call` activity, one transaction per
        batch; a batch's rows are made on a worker thread while the previous batch is written
        (the writer is what a large load waits for: `demo --calls 1000000`)."""
        check_scope(workspace_id, documents)
        writing = None
        try:
            for start in range(0, len(documents), INSERT_BATCH):
                new = await asyncio.to_thread(prepare, documents[start : start + INSERT_BATCH])
                if writing is not None:
                    await writing
                writing = asyncio.ensure_future(
                    self.engine.write(write_calls, workspace_id, new, self.events, timeout=600)
                )
        finally:
            if writing is not None:
                await writing

    async def page(
        self, workspace_id: str, window: Window, *, encoded: bool = False, **filters: Any
    ) -> Page:
        """One window of calls in the window's order; `filters` as `call_where`. With
        `encoded` the records come as one JSON array (store.paging.RawJSON)."""
        where, params = call_where(workspace_id, **filters)

        def page_of(conn):
            return page_query(
                conn,
                fields=FIELDS,
                source="calls",
                where=where,
                params=params,
                window=window,
                order=(window.field, "_id"),
                record=call_record,
                encoded=ENCODED if encoded else None,
                counted=(workspace_id, "calls") if len(where) == 1 else None,
            )

        return await self.engine.read(
            page_of, snapshot=not encoded, quick=quick(window, len(where) == 1)
        )

    async def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = BATCH_SIZE,
        **filters: Any,
    ) -> AsyncGenerator[Lines, None]:
        """The calls last changed at or before `settled_before`, in the sync order, as NDJSON
        batches; `filters` as `call_where`."""
        where, params = call_where(workspace_id, **filters)
        # A prospect's calls are few: found by their index and sorted, rather than picked out
        # of the whole sync order's index (which a wider filter walks, once, batch by batch).
        narrow = filters.get("prospect_id") is not None
        async for batch in export_batches(
            self.engine,
            source="calls INDEXED BY calls_ws_prospect_newest" if narrow else "calls",
            where=where,
            params=params,
            order=("updatedAt", "_id"),
            encoded=ENCODED,
            settled_before=settled_before,
            batch_size=batch_size,
        ):
            yield batch

    async def recording_ref(self, workspace_id: str, call_id: str) -> str | None:
        """The provider's reference of the call's recording; None when the call is not in this
        workspace or has no recording."""

        def ref(conn):
            row = conn.execute(
                'SELECT recordingRef FROM calls WHERE "_id" = ? AND '
                "workspaceId = ? AND hasRecording = 1",
                (call_id, workspace_id),
            ).fetchone()
            return row and row[0]

        return await self.engine.read(ref, quick=True)

    async def claim_expired_recordings(
        self,
        workspace_id: str,
        ended_before: dt.datetime,
        now: dt.datetime,
        lease: dt.timedelta,
        limit: int,
    ) -> list[DueRecording]:
        """Claim up to `limit` calls whose recordings are due (store/sqlite/retention.py)."""
        return await self.engine.write(
            claim_due, workspace_id, ended_before, now, lease, limit, durable=False
        )

    async def forget_recording(self, workspace_id: str, due: DueRecording) -> dict | None:
        """Remove a recording reference the provider confirmed gone, with `call.updated`."""
        return await self.engine.write(forget, workspace_id, due, self.events)

    async def postpone_recording(
        self, workspace_id: str, due: DueRecording, until: dt.datetime
    ) -> None:
        """The call is due again at `until` (a provider failure)."""
        await self.engine.write(postpone, workspace_id, due, until, durable=False)
