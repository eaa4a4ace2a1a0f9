"""Idempotency-Key records on MongoDB: one document per workspace and key (`_id` names both),
claimed by an insert (the unique `_id` lets one request win), and removed by a TTL index on
`expiresAt` once their 24 hours are over.

Without multi-document transactions the response cannot commit with the write it answers:
instead a write that takes an Idempotency-Key derives the ids of what it creates from the key
(store/idempotency.py), so that an attempt after a crash finds what an earlier one wrote, and
stores the response right after (`store_response`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from store.idempotency import (
    IdempotentWrite,
    KeyState,
    StoredResponse,
    new_seed,
    stale,
    this_process,
)
from store.mongo.errors import translate_errors

EPOCH = dt.datetime(1970, 1, 1)  # a released claim's lock: lapsed
FIELDS = {
    "_id": 0,
    "fingerprint": 1,
    "status": 1,
    "body": 1,
    "contentType": 1,
    "location": 1,
    "lockedUntil": 1,
    "expiresAt": 1,
    "seed": 1,
    "holder": 1,
}


def _response(doc: dict) -> StoredResponse | None:
    if doc.get("status") is None:
        return None
    return StoredResponse(doc["status"], doc["body"], doc["contentType"], doc.get("location"))


def _held(doc: dict) -> KeyState:
    """The state of a record that another request holds (or held)."""
    return KeyState(False, doc["fingerprint"], doc.get("seed") or "", _response(doc))


async def store_response(col: AsyncCollection, once: IdempotentWrite, result: Any) -> None:
    """Store the response to a write's `result` (in `col`, the idempotency collection), once
    the write is done: a crash before this leaves a claim that the retry takes over, and the
    retry finds what this attempt wrote by its derived ids."""
    response = once.answer(result)
    await col.update_one(
        {"_id": f"{once.workspace_id}:{once.key}", "workspaceId": once.workspace_id},
        {
            "$set": {
                "status": response.status,
                "body": response.body,
                "contentType": response.content_type,
                "location": response.location,
            },
            # The claim is gone (freed by a failed attempt, or swept): the record anew.
            "$setOnInsert": {
                "key": once.key,
                "fingerprint": once.fingerprint,
                "seed": once.seed,
                "lockedUntil": once.expires_at,
                "expiresAt": once.expires_at,
            },
        },
        upsert=True,
    )
    once.stored = True


@translate_errors
class Idempotency:
    def __init__(self, db: AsyncDatabase) -> None:
        self.col = db["idempotency"]

    async def begin(
        self,
        workspace_id: str,
        key: str,
        fingerprint: str,
        now: dt.datetime,
        lock: dt.timedelta,
        ttl: dt.timedelta,
    ) -> KeyState:
        """Claim the key, or the state of the record that holds it (store.contract)."""
        ident = f"{workspace_id}:{key}"
        found: dict | None = None
        for _ in range(3):
            seed = new_seed()
            claim: dict = {
                "_id": ident,
                "workspaceId": workspace_id,
                "key": key,
                "fingerprint": fingerprint,
                "status": None,
                "seed": seed,
                "holder": this_process(),
                "lockedUntil": now + lock,
                "expiresAt": now + ttl,
            }
            try:
                await self.col.insert_one(claim)
                return KeyState(True, fingerprint, seed)
            except DuplicateKeyError:
                found = await self.col.find_one({"_id": ident}, FIELDS)
            if found is None:
                continue  # deleted meanwhile: try the claim again
            expired = found["expiresAt"] <= now
            if not expired and not stale(found, now, fingerprint):
                return _held(found)
            if not expired:
                seed = claim["seed"] = found.get("seed") or seed  # the same derived ids
            # Take the record over only as it was read: a concurrent taker loses.
            replaced = await self.col.find_one_and_replace(
                {
                    "_id": ident,
                    "expiresAt": found["expiresAt"],
                    "lockedUntil": found["lockedUntil"],
                    "status": found["status"],
                    "holder": found.get("holder"),
                },
                claim,
            )
            if replaced is not None:
                return KeyState(True, fingerprint, seed)
        if found is None:
            raise RuntimeError(f"the Idempotency-Key record {ident} kept disappearing")
        return _held(found)

    async def complete(
        self,
        workspace_id: str,
        key: str,
        status: int,
        body: str,
        content_type: str,
        location: str | None,
    ) -> None:
        """Store the response of a request that wrote nothing (a client error)."""
        await self.col.update_one(
            {"_id": f"{workspace_id}:{key}", "workspaceId": workspace_id},
            {
                "$set": {
                    "status": status,
                    "body": body,
                    "contentType": content_type,
                    "location": location,
                }
            },
        )

    async def release(self, workspace_id: str, key: str) -> None:
        """Free this process's claim of the key (its request failed with a 5xx: the retry may
        run again); the claim stays, with its seed, for the retry to take over, so that it
        finds what this attempt may have written."""
        await self.col.update_one(
            {
                "_id": f"{workspace_id}:{key}",
                "workspaceId": workspace_id,
                "status": None,
                "holder": this_process(),
            },
            {"$set": {"lockedUntil": EPOCH, "holder": None}},
        )
