"""The tombstone sweep on MongoDB (store/tombstones.py): deletes that stopped half-way are
finished (store/mongo/prospect_changes.py), then tombstones past the retention horizon are
deleted in bounded batches, oldest first, each found through the collection's `deleted` index
(on `deletedAt`, across workspaces; partial where the server has partial indexes). Every delete
re-checks `deletedAt`, so several processes sweeping at once only find less to delete."""

from __future__ import annotations

import datetime as dt

from pymongo.asynchronous.database import AsyncDatabase

COLLECTIONS = ("prospects", "lists")
GRACE = dt.timedelta(minutes=1)  # a delete still running is left alone this long


async def sweep_tombstones(
    db: AsyncDatabase, horizon: dt.datetime, batch: int = 1000, max_batches: int = 10
) -> int:
    """Delete up to `max_batches` batches of `batch` tombstones per collection deleted before
    `horizon`; how many."""
    deleted = 0
    for name in COLLECTIONS:
        col = db[name]
        expired = {"deletedAt": {"$exists": True, "$lt": horizon}}
        for _ in range(max_batches):
            cursor = col.find(expired, {"_id": 1}).sort("deletedAt", 1).limit(batch)
            ids = [doc["_id"] async for doc in cursor]
            if ids:
                result = await col.delete_many({"_id": {"$in": ids}, **expired})
                deleted += result.deleted_count
            if len(ids) < batch:
                break
    return deleted
