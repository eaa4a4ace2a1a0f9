"""Prospect activities on MongoDB: bulk inserts, idempotent `list_added` upserts and the
timeline stream.

One document per activity, read newest first (occurredAt, then id) through the index
`ws_prospect_timeline`. The timeline is unbounded, so it is read as a stream of bounded batches
from one cursor (`timeline`), never as one list.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from pymongo import UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from store.activities import (
    FIELDS,
    INSERT_BATCH,
    TIMELINE_ORDER,
    check_scope,
    list_added_activity,
)
from store.activities import record as _record
from store.mongo.errors import translate_errors

if TYPE_CHECKING:
    from store.mongo.events import EventWriter, Pending


async def record_list_added(
    col: AsyncCollection,
    workspace_id: str,
    list_id: str,
    list_name: str | None,
    prospect_ids: list[str],
    at: dt.datetime,
    pending: Pending,
) -> list[dict]:
    """One `list_added` activity per prospect and list in `col` (the activities), in one round
    trip, marked with `pending`; idempotent. Part of a contact upload
    (store/mongo/prospects.py). The activities this call inserted (not those already there)."""
    docs, writes = [], []
    for prospect_id in dict.fromkeys(prospect_ids):
        doc = list_added_activity(workspace_id, prospect_id, list_id, list_name, at)
        docs.append(doc)
        writes.append(
            UpdateOne(
                {"_id": doc["_id"], "workspaceId": workspace_id},
                {"$setOnInsert": pending.new(doc)},
                upsert=True,
            )
        )
    if not writes:
        return []
    written = await col.bulk_write(writes, ordered=False)
    inserted = set((written.upserted_ids or {}).values())
    return [doc for doc in docs if doc["_id"] in inserted]


@translate_errors
class Activities:
    def __init__(self, db: AsyncDatabase, events: EventWriter) -> None:
        self.col = db["activities"]
        self.events = events

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt activity documents (`activity_document`) in bounded batches, with
        their events."""
        check_scope(workspace_id, documents)
        for start in range(0, len(documents), INSERT_BATCH):
            batch = documents[start : start + INSERT_BATCH]
            pending = self.events.begin()
            await self.col.insert_many([pending.new(doc) for doc in batch], ordered=False)
            await self.events.publish(workspace_id, pending, inserted=batch)

    async def timeline(
        self, workspace_id: str, prospect_id: str, batch_size: int = 500
    ) -> AsyncGenerator[list[dict], None]:
        """A prospect's activities, newest first, as API records in batches of `batch_size`.

        One cursor that fetches `batch_size` documents per round trip, so memory stays bounded
        whatever the timeline's length. Use it with `contextlib.aclosing`: closing the
        generator (a client that went away) closes the cursor on the server.
        """
        cursor = (
            self.col.find({"workspaceId": workspace_id, "prospectId": prospect_id}, FIELDS)
            .sort(TIMELINE_ORDER)
            .batch_size(batch_size)
        )
        try:
            batch: list[dict] = []
            async for doc in cursor:
                batch.append(_record(doc))
                if len(batch) == batch_size:
                    yield batch
                    batch = []
            if batch:
                yield batch
        finally:
            await cursor.close()
