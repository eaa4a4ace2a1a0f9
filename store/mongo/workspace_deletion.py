"""Deleting a whole workspace on MongoDB, step by step (store/workspace_deletion.py): each step
idempotent, so that a deletion cut short is carried on by running it again. The documents are
removed; what the server's storage engine keeps of them afterwards is the server's
(docs/deployment.md, "A customer who leaves")."""

from __future__ import annotations

import datetime as dt

from pymongo.asynchronous.database import AsyncDatabase

from store.mongo.webhook_endpoints import fail_pending
from store.records import workspace_record
from store.webhooks import DISABLED, ENABLED
from store.workspace_deletion import (
    CALL,
    DISABLED_REASON,
    NOT_OF_A_WORKSPACE,
    PROVIDER_CALL,
    purge_order,
    split_key,
)

# Collections whose `_id` starts with the workspace's id and a colon (Idempotency-Key answers,
# leases, provider call states): found by a range of `_id`, on its index, rather than a scan.
PREFIXED = frozenset({"idempotency", "leases", "provider_calls"})


async def find(db: AsyncDatabase, workspace_id: str) -> dict | None:
    doc = await db["workspaces"].find_one({"_id": workspace_id})
    return doc and workspace_record(doc)


async def begin(db: AsyncDatabase, workspace_id: str, now: dt.datetime) -> dict | None:
    """Mark the workspace, delete its keys, disable its webhook endpoints (each write
    idempotent: run again, it completes what a crash left half done)."""
    await db["workspaces"].update_one(
        {"_id": workspace_id, "deletingAt": None}, {"$set": {"deletingAt": now}}
    )
    record = await find(db, workspace_id)
    if record is None:
        return None
    await db["api_keys"].delete_many({"workspaceId": workspace_id})
    await db["webhook_endpoints"].update_many(
        {"workspaceId": workspace_id, "status": ENABLED},
        {
            "$set": {
                "status": DISABLED,
                "disabledReason": DISABLED_REASON,
                "disabledAt": now,
                "updatedAt": now,
            }
        },
    )
    endpoints = db["webhook_endpoints"].find({"workspaceId": workspace_id}, {"_id": 1})
    async for endpoint in endpoints:
        await fail_pending(db, workspace_id, endpoint["_id"], now)
    return record


async def recordings(
    db: AsyncDatabase, workspace_id: str, after: str, limit: int
) -> list[tuple[str, str]]:
    after_call, after_sid = split_key(after)
    calls = (
        db["calls"]
        .find(
            {
                "workspaceId": workspace_id,
                "_id": {"$gt": after_call},
                "recordingRef": {"$ne": None},
            },
            {"recordingRef": 1},
        )
        .sort("_id", 1)
        .limit(limit)
    )
    found = [(CALL + doc["_id"], doc["recordingRef"]) async for doc in calls]
    if len(found) < limit:
        held = (
            db["provider_calls"]
            .find(
                {
                    "workspaceId": workspace_id,
                    "callSid": {"$gt": after_sid},
                    "recordingSid": {"$ne": None},
                },
                {"callSid": 1, "recordingSid": 1},
            )
            .sort("callSid", 1)
            .limit(limit - len(found))
        )
        found += [(PROVIDER_CALL + doc["callSid"], doc["recordingSid"]) async for doc in held]
    return found


async def forget_recordings(db: AsyncDatabase, workspace_id: str, keys: list[str]) -> None:
    calls = [key.removeprefix(CALL) for key in keys if key.startswith(CALL)]
    sids = [key.removeprefix(PROVIDER_CALL) for key in keys if key.startswith(PROVIDER_CALL)]
    if calls:
        await db["calls"].update_many(
            {"workspaceId": workspace_id, "_id": {"$in": calls}}, {"$unset": {"recordingRef": ""}}
        )
    if sids:
        await db["provider_calls"].update_many(
            {"workspaceId": workspace_id, "callSid": {"$in": sids}},
            {"$set": {"recordingSid": None}},
        )


def _selector(collection: str, workspace_id: str) -> dict:
    selector: dict = {"workspaceId": workspace_id}
    if collection in PREFIXED:
        selector["_id"] = {"$gte": f"{workspace_id}:", "$lt": f"{workspace_id};"}
    return selector


async def purge(db: AsyncDatabase, workspace_id: str, batch: int) -> int:
    """Delete at most `batch` documents of the workspace, from the first collection in purge
    order that still has some; how many."""
    names = [name for name in await db.list_collection_names() if name not in NOT_OF_A_WORKSPACE]
    for name in purge_order(names):
        selector = _selector(name, workspace_id)
        ids = [doc["_id"] async for doc in db[name].find(selector, {"_id": 1}).limit(batch)]
        if ids:
            result = await db[name].delete_many({**selector, "_id": {"$in": ids}})
            return result.deleted_count or len(ids)
    return 0


async def remove(db: AsyncDatabase, workspace_id: str) -> bool:
    return bool((await db["workspaces"].delete_one({"_id": workspace_id})).deleted_count)
