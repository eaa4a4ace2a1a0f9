"""Exports on MongoDB: a resource's settled records in the sync order, in bounded keyset batches
(store/exports.py).

Each batch is one `find` sorted on the index that starts with (workspaceId, the instant, _id),
limited to the batch size and positioned after the previous batch's last record, so no server
cursor stays open between two batches (an export outlives any cursor timeout, and a replica
set's failover in between costs one retried batch, not the export).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator, Callable

from pymongo.asynchronous.collection import AsyncCollection


async def export_batches(
    col: AsyncCollection,
    query: dict,
    field: str,
    settled_before: dt.datetime,
    projection: dict,
    record: Callable[[dict], dict],
    batch_size: int,
) -> AsyncGenerator[list[dict], None]:
    """The documents of `query` whose `field` (an instant) is at or before `settled_before`,
    ordered by (field, _id), as records (`record`) in batches of at most `batch_size`."""
    settled = {field: {"$lte": settled_before}}
    order = [(field, 1), ("_id", 1)]
    after: tuple[dt.datetime, str] | None = None
    while True:
        conditions = [query, settled]
        if after is not None:
            value, ident = after
            conditions.append(
                {"$or": [{field: {"$gt": value}}, {field: value, "_id": {"$gt": ident}}]}
            )
        cursor = col.find({"$and": conditions}, projection).sort(order).limit(batch_size)
        documents = await cursor.to_list()
        if documents:
            yield [record(doc) for doc in documents]
        if len(documents) < batch_size:
            return
        after = (documents[-1][field], documents[-1]["_id"])
