"""Idempotency-Key records on MongoDB: one document per workspace and key (`_id` names both),
claimed by an insert (the unique `_id` lets one request win), and removed by a TTL index on
`expiresAt` once their 24 hours are over."""

from __future__ import annotations

import datetime as dt

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from store.mongo.errors import translate_errors

FIELDS = {
    "_id": 0,
    "fingerprint": 1,
    "status": 1,
    "body": 1,
    "contentType": 1,
    "location": 1,
    "lockedUntil": 1,
    "expiresAt": 1,
}


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
    ) -> dict | None:
        """Claim the key (None), or the record that holds it (see the SQLite twin)."""
        ident = f"{workspace_id}:{key}"
        claim = {
            "_id": ident,
            "workspaceId": workspace_id,
            "key": key,
            "fingerprint": fingerprint,
            "status": None,
            "lockedUntil": now + lock,
            "expiresAt": now + ttl,
        }
        for _ in range(3):
            try:
                await self.col.insert_one(claim)
                return None
            except DuplicateKeyError:
                found = await self.col.find_one({"_id": ident}, FIELDS)
            if found is None:
                continue  # deleted meanwhile: try the claim again
            stale = found["expiresAt"] <= now or (
                found["status"] is None and found["lockedUntil"] <= now
            )
            if not stale:
                return found
            # Take a stale record over only as it was read: a concurrent taker loses.
            replaced = await self.col.find_one_and_replace(
                {
                    "_id": ident,
                    "expiresAt": found["expiresAt"],
                    "lockedUntil": found["lockedUntil"],
                    "status": found["status"],
                },
                claim,
            )
            if replaced is not None:
                return None
        return found

    async def complete(
        self,
        workspace_id: str,
        key: str,
        status: int,
        body: str,
        content_type: str,
        location: str | None,
    ) -> None:
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
        """Free a claimed key (the request failed with a 5xx: its retry may run again)."""
        await self.col.delete_one(
            {"_id": f"{workspace_id}:{key}", "workspaceId": workspace_id, "status": None}
        )
