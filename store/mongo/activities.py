"""Prospect activities on MongoDB: bulk inserts, idempotent `list_added` upserts and the
timeline stream.

One document per activity, read newest first (occurredAt, then id) through the index
`ws_prospect_timeline`. The timeline is unbounded, so it is read as a stream of bounded batches
from one cursor (`timeline`), never as one list. The export reads every activity of a workspace
in the order they were stored (`ws_stored_id`); `fill_stored_at` gives the documents written
before `storedAt` existed their `occurredAt`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from pymongo import UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from store.activities import (
    EXPORT_FIELDS,
    FIELDS,
    INSERT_BATCH,
    TIMELINE_ORDER,
    check_scope,
    export_record,
    list_added_activity,
)
from store.activities import record as _record
from store.exports import BATCH_SIZE
from store.idempotency import IdempotentWrite
from store.ingest import (
    CREATED,
    EXISTING,
    Logged,
    NewActivity,
    Refusal,
    activity_documents,
    activity_ids,
    activity_wanted,
)
from store.mongo.bulk import bulk, ids_in
from store.mongo.errors import translate_errors
from store.mongo.exports import export_batches
from store.mongo.idempotency import store_response

FILL_BATCH = 1000


async def fill_stored_at(db: AsyncDatabase) -> int:
    """Give every activity stored before `storedAt` existed its `occurredAt` as `storedAt`,
    workspace by workspace through the index `ws_stored_id` (where the missing field reads as
    null), in bounded batches; idempotent, and one indexed query per workspace once done. How
    many were filled."""
    col, filled = db["activities"], 0
    async for workspace in db["workspaces"].find({}, {"_id": 1}):
        missing = {"workspaceId": workspace["_id"], "storedAt": None}
        while True:
            found = await col.find(missing, {"occurredAt": 1}).limit(FILL_BATCH).to_list()
            if not found:
                break
            await col.bulk_write(
                [
                    UpdateOne(
                        {"_id": doc["_id"], **missing},
                        {"$set": {"storedAt": doc["occurredAt"]}},
                    )
                    for doc in found
                ],
                ordered=False,
            )
            filled += len(found)
    return filled


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


async def off_deleted_prospects(
    db: AsyncDatabase, workspace_id: str, entries: list[tuple[str, str]]
) -> set[str]:
    """After writing activities ((activity id, prospect id) pairs): those whose prospect was
    deleted meanwhile are deleted again, and their ids returned. A prospect's delete marks it
    deleted before it deletes its timeline, so an activity written before that mark goes with
    the timeline, and one written after it is found here: no timeline outlives its prospect."""
    prospects = {prospect_id for _, prospect_id in entries}
    live = await ids_in(db["prospects"], workspace_id, prospects, deletedAt=None)
    orphans = sorted({activity_id for activity_id, p in entries if p not in live})
    if orphans:
        await db["activities"].delete_many({"_id": {"$in": orphans}, "workspaceId": workspace_id})
    return set(orphans)


async def log_activities(
    db: AsyncDatabase,
    workspace_id: str,
    activities: list[NewActivity],
    ids: list[str],
    partial: bool,
    pending: Pending,
) -> tuple[list[Logged], list[dict]]:
    """Log activities: references checked first, then one upsert per activity on its id,
    marked with `pending` (idempotent: an id written before is `existing`). The results, and
    the activity documents it inserted (whose events the caller publishes)."""
    prospects, users, calls = activity_wanted(activities)
    found = (
        await ids_in(db["prospects"], workspace_id, prospects, deletedAt=None),
        await ids_in(db["users"], workspace_id, users, deletedAt=None),
        await ids_in(db["calls"], workspace_id, calls),
    )
    results: list[Logged] = []
    writes, docs = [], []
    for doc in activity_documents(workspace_id, activities, ids, found, partial):
        if isinstance(doc, Refusal):
            results.append(Logged(None, None, doc))
            continue
        docs.append(doc)
        writes.append(
            UpdateOne(
                {"_id": doc["_id"], "workspaceId": workspace_id},
                {"$setOnInsert": pending.new(doc)},
                upsert=True,
            )
        )
        results.append(Logged(_record(doc), EXISTING))
    upserted = await bulk(db["activities"], writes)
    orphans = await off_deleted_prospects(
        db, workspace_id, [(doc["_id"], doc["prospectId"]) for doc in docs]
    )
    for logged in results:
        if logged.activity is not None and logged.activity["id"] in upserted:
            logged.outcome = CREATED
    return results, [doc for doc in docs if doc["_id"] in upserted and doc["_id"] not in orphans]


@translate_errors
class Activities:
    def __init__(self, db: AsyncDatabase, events: EventWriter) -> None:
        self.db = db
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

    async def log(
        self,
        workspace_id: str,
        activities: list[NewActivity],
        ids: list[str] | None = None,
        once: IdempotentWrite | None = None,
        partial: bool = False,
    ) -> list[Logged]:
        """Log activities on their prospects' timelines with their events; with an
        Idempotency-Key their ids derive from it, and the response is stored at the end."""
        if ids is None and once is not None:
            ids = [once.record_id("activity", str(i)) for i in range(len(activities))]
        pending = self.events.begin()
        logged, inserted = await log_activities(
            self.db, workspace_id, activities, activity_ids(len(activities), ids), partial, pending
        )
        await self.events.publish(workspace_id, pending, inserted=inserted)
        if once is not None:
            await store_response(self.db["idempotency"], once, logged)
        return logged

    async def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = BATCH_SIZE,
        stored_since: dt.datetime | None = None,
    ) -> AsyncGenerator[list[dict], None]:
        """Every activity of the workspace stored at or before `settled_before` (and at or
        after `stored_since`), in the order they were stored (then id), in batches of
        records."""
        query: dict = {"workspaceId": workspace_id}
        if stored_since is not None:
            query["storedAt"] = {"$gte": stored_since}
        async for batch in export_batches(
            self.col,
            query,
            "storedAt",
            settled_before,
            EXPORT_FIELDS,
            export_record,
            batch_size,
        ):
            yield batch

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
