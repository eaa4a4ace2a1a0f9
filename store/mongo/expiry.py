"""The expiry sweep on MongoDB: Idempotency-Key records, rate-limit windows and leases past their
expiry time are deleted in bounded batches, each found through the index on its expiry field
(indexes.EXPIRY).

TTL indexes do the same where the server keeps them; the sweep makes expiry independent of
them (FerretDB has none) and is harmless beside them. Every delete re-checks the expiry, so a
record renewed meanwhile (a lease taken again, a key claimed anew) stays; several processes
sweeping at once only find less to delete.
"""

from __future__ import annotations

import datetime as dt

from pymongo.asynchronous.database import AsyncDatabase

from store.mongo.indexes import EXPIRY


async def sweep_expired(
    db: AsyncDatabase, now: dt.datetime, batch: int = 1000, max_batches: int = 10
) -> int:
    """Delete up to `max_batches` batches of `batch` expired records per collection (two
    round trips a batch: the ids, oldest first, then their delete); how many were deleted."""
    deleted = 0
    for collection, field in EXPIRY.items():
        col = db[collection]
        for _ in range(max_batches):
            expired = {field: {"$lte": now}}
            cursor = col.find(expired, {"_id": 1}).sort(field, 1).limit(batch)
            ids = [doc["_id"] async for doc in cursor]
            if ids:
                result = await col.delete_many({"_id": {"$in": ids}, **expired})
                deleted += result.deleted_count
            if len(ids) < batch:
                break
    return deleted
