"""Writes and lookups by id on MongoDB that several collections' writes share: bulk writes in
pieces a server takes, and which of a set of ids a workspace has."""

from __future__ import annotations

from collections.abc import Collection

from pymongo.asynchronous.collection import AsyncCollection

# Bulk writes go in pieces of this many operations: FerretDB 1.24 deadlocks on an update
# command of 100 operations that match (tests/wire.py).
PIECE = 64


async def ids_in(
    col: AsyncCollection, workspace_id: str, ids: Collection[str], **more: object
) -> set:
    """The ids among `ids` of documents of the workspace in `col` (by `_id`)."""
    if not ids:
        return set()
    query = {"_id": {"$in": sorted(ids)}, "workspaceId": workspace_id, **more}
    return {doc["_id"] async for doc in col.find(query, {"_id": 1})}


async def bulk(col: AsyncCollection, writes: list) -> dict[str, object]:
    """Run `writes` in pieces; the ids upserted, each with the operation's _id."""
    upserted: dict[str, object] = {}
    for start in range(0, len(writes), PIECE):
        piece = writes[start : start + PIECE]
        result = await col.bulk_write(piece, ordered=False)
        for value in (result.upserted_ids or {}).values():
            upserted[str(value)] = value
    return upserted
