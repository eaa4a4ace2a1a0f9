"""Prospect activities on SQLite: bulk inserts, logging (store/sqlite/ingest.py), the timeline,
read newest first in bounded batches by keyset (each batch its own short read, so no cursor
stays open between them), and the export of every activity in the order they were stored."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from store.activities import INSERT_BATCH, check_scope, record
from store.exports import BATCH_SIZE, Lines
from store.idempotency import IdempotentWrite
from store.ingest import Logged, NewActivity, activity_ids
from store.sqlite.engine import Engine
from store.sqlite.exports import export_batches
from store.sqlite.idempotency import write_once
from store.sqlite.ingest import log_activities
from store.sqlite.schema import insert, json_record, ms, to_doc

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

TIMELINE = (
    'SELECT "_id", type, occurredAt, userId, callId, summary, details FROM activities '
    "WHERE workspaceId = ? AND prospectId = ?"
)
# An activity as its event carries it: the timeline's record (store.activities.record) and
# the prospect whose timeline holds it.
EVENT_JSON = json_record(
    {
        "id": "_id",
        **{name: name for name in ("type", "occurredAt", "userId", "callId", "summary")},
        "details": "details",
        "prospectId": "prospectId",
    }
)

EVENT_SOURCE = ("activities", "", EVENT_JSON)  # store/sqlite/events.py


def write_activities(
    conn: sqlite3.Connection, workspace_id: str, documents: list[dict], events: EventWriter
) -> None:
    """Insert activity documents with their `activity.created` events (caller's transaction)."""
    insert(conn, "activities", documents)
    events.record(conn, workspace_id, (("activity.created", doc["_id"]) for doc in documents))


# The activities export's record (store.activities.export_record); a row stored before
# `storedAt` existed was given its occurredAt when the file was opened (schema.FILLED_FROM).
EXPORT_JSON = json_record(
    {
        "id": "_id",
        "prospectId": "prospectId",
        "type": "type",
        "occurredAt": "occurredAt",
        "storedAt": "storedAt",
        "userId": "userId",
        "callId": "callId",
        "summary": "summary",
        "details": "details",
    }
)


class Activities:
    def __init__(self, engine: Engine, events: EventWriter) -> None:
        self.engine = engine
        self.events = events

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt activity documents (`activity_document`) in bounded batches, each
        batch one transaction with its events."""
        check_scope(workspace_id, documents)
        for start in range(0, len(documents), INSERT_BATCH):
            await self.engine.write(
                write_activities,
                workspace_id,
                documents[start : start + INSERT_BATCH],
                self.events,
                timeout=600,
            )

    async def log(
        self,
        workspace_id: str,
        activities: list[NewActivity],
        ids: list[str] | None = None,
        once: IdempotentWrite | None = None,
        partial: bool = False,
    ) -> list[Logged]:
        """Log activities on their prospects' timelines in one transaction
        (store/sqlite/ingest.py)."""
        if ids is None and once is not None:
            ids = [once.record_id("activity", str(i)) for i in range(len(activities))]
        return await write_once(
            self.engine,
            once,
            log_activities,
            workspace_id,
            activities,
            activity_ids(len(activities), ids),
            partial,
            self.events,
            timeout=600 if partial else None,
        )

    async def timeline(
        self, workspace_id: str, prospect_id: str, batch_size: int = 500
    ) -> AsyncGenerator[list[dict], None]:
        """A prospect's activities, newest first, as API records in batches of `batch_size`.
        Memory stays bounded whatever the timeline's length; closing the generator ends it."""
        after = None
        while True:
            batch = await self.engine.read(
                self._batch, workspace_id, prospect_id, after, batch_size
            )
            if batch:
                yield [record(doc) for doc in batch]
            if len(batch) < batch_size:
                return
            after = batch[-1]["_raw"]

    async def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = BATCH_SIZE,
        stored_since: dt.datetime | None = None,
    ) -> AsyncGenerator[Lines, None]:
        """Every activity of the workspace stored at or before `settled_before` (and at or
        after `stored_since`), in the order they were stored (then id), as NDJSON batches."""
        where: list[str] = ["workspaceId = ?"]
        params: list = [workspace_id]
        if stored_since is not None:
            where.append("storedAt >= ?")
            params.append(ms(stored_since))
        async for batch in export_batches(
            self.engine,
            source="activities",
            where=where,
            params=params,
            order=("storedAt", "_id"),
            encoded=EXPORT_JSON,
            settled_before=settled_before,
            batch_size=batch_size,
        ):
            yield batch

    @staticmethod
    def _batch(
        conn: sqlite3.Connection,
        workspace_id: str,
        prospect_id: str,
        after: tuple[int, str] | None,
        size: int,
    ) -> list[dict]:
        query = TIMELINE
        params: list[object] = [workspace_id, prospect_id]
        if after is not None:
            query += " AND (occurredAt, _id) < (?, ?)"
            params += after
        rows = conn.execute(
            query + " ORDER BY occurredAt DESC, _id DESC LIMIT ?", (*params, size)
        ).fetchall()
        docs = []
        for row in rows:
            doc = to_doc(row)
            doc["_raw"] = (row["occurredAt"], row["_id"])
            docs.append(doc)
        return docs
