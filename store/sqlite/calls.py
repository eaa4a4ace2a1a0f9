"""Calls on SQLite: the paginated, filtered call log and the recording reference of a call."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import sqlite3
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from store.activities import call_activity, check_scope
from store.calls import INSERT_BATCH, RECORD_FIELDS, call_document
from store.calls import record as call_record
from store.clock import utcnow
from store.exports import BATCH_SIZE, Lines
from store.paging import Page, Window
from store.sqlite.engine import Engine
from store.sqlite.exports import export_batches
from store.sqlite.metrics import add_to_quarters, quarter_sums
from store.sqlite.paging import bump, page_query, quick
from store.sqlite.schema import Rows, insert_rows, json_record, ms, rows_of, to_doc

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

FIELDS = ", ".join(f'"{name}"' for name in ("_id", *RECORD_FIELDS))
SELECT = f"SELECT {FIELDS} FROM calls"
SHOWN = {"id": "_id", **{name: name for name in RECORD_FIELDS}}  # record key: column
JSON = json_record(SHOWN)  # a call's record built from its columns
# A page reads each call's record as stored by its insert (or, in a row written before the
# `record` column existed, builds it there and then).
ENCODED = f"coalesce(record, {JSON})"
EVENT_SOURCE = ("calls", "", ENCODED)  # a call's event data: its stored record
EQUALITY = {
    "user_id": "userId",
    "prospect_id": "prospectId",
    "list_id": "listId",
    "direction": "direction",
    "disposition": "disposition",
}


@dataclasses.dataclass
class NewCalls:
    """What inserting a batch of calls writes, made before the write unit (`prepare`)."""

    count: int
    calls: Rows
    activities: Rows
    quarters: dict[tuple, list[int]]
    events: list[tuple[str, str]]  # (event type, record id)


def prepare(documents: list[dict]) -> NewCalls:
    """The rows of new call documents, their `call` timeline entries, their quarter-hour counts
    and their events: pure Python, made on a worker thread while the writer writes the previous
    batch."""
    entries = [call_activity(doc) for doc in documents]
    return NewCalls(
        len(documents),
        rows_of(documents),
        rows_of(entries),
        quarter_sums(documents),
        [("call.created", doc["_id"]) for doc in documents]
        + [("activity.created", entry["_id"]) for entry in entries],
    )


def write_calls(
    conn: sqlite3.Connection, workspace_id: str, new: NewCalls, events: EventWriter
) -> None:
    """Insert calls with their `call` timeline entries, count them and record their events,
    in the caller's transaction."""
    insert_rows(
        conn, "calls", new.calls, computed={"record": lambda value: json_record(SHOWN, value)}
    )
    insert_rows(conn, "activities", new.activities, "INSERT OR IGNORE")
    bump(conn, workspace_id, "calls", new.count)
    add_to_quarters(conn, workspace_id, new.quarters)
    events.record(conn, workspace_id, new.events)


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


class Calls:
    def __init__(self, engine: Engine, events: EventWriter) -> None:
        self.engine = engine
        self.events = events

    async def create(self, workspace_id: str, **fields: Any) -> dict:
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

    async def update_notes(self, workspace_id: str, call_id: str, notes: str | None) -> dict | None:
        """Change a call's notes (which moves its updatedAt); its record, or None."""

        def update(conn: sqlite3.Connection) -> dict | None:
            changed = conn.execute(
                'UPDATE calls SET notes = ?, updatedAt = ? WHERE "_id" = ? AND workspaceId = ?',
                (notes, ms(utcnow()), call_id, workspace_id),
            ).rowcount
            conn.execute(
                f'UPDATE calls SET record = {JSON} WHERE "_id" = ? AND workspaceId = ?',
                (call_id, workspace_id),
            )
            if changed:
                self.events.record(conn, workspace_id, [("call.updated", call_id)])
            row = conn.execute(
                f'{SELECT} WHERE "_id" = ? AND workspaceId = ?', (call_id, workspace_id)
            ).fetchone()
            return row and call_record(to_doc(row))

        return await self.engine.write(update)

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
