"""API key records. The plain key (a signed JWT) is never stored: only its id and metadata.
A document written before keys had scopes and expiry has neither field (store/keys.py)."""

from __future__ import annotations

import datetime as dt

from pymongo.asynchronous.database import AsyncDatabase

from store.clock import SYSTEM_CLOCK, Clock, new_id
from store.keys import DEFAULT_SCOPES, ActiveKey, active_key, key_document
from store.keys import key_record as _record
from store.mongo.errors import translate_errors

# What authentication reads of a key.
ACTIVE_FIELDS = {"_id": 1, "workspaceId": 1, "scopes": 1, "expiresAt": 1}


@translate_errors
class Keys:
    def __init__(self, db: AsyncDatabase, clock: Clock = SYSTEM_CLOCK) -> None:
        self.col = db["api_keys"]
        self.clock = clock

    async def create(
        self,
        workspace_id: str,
        name: str,
        scopes: frozenset[str] = DEFAULT_SCOPES,
        expires_at: dt.datetime | None = None,
    ) -> dict:
        doc = key_document(workspace_id, new_id(), name, scopes, self.clock.now(), expires_at)
        await self.col.insert_one(doc)
        return _record(doc)

    async def list(self, workspace_id: str) -> list[dict]:
        cursor = self.col.find({"workspaceId": workspace_id}).sort("createdAt", 1)
        return [_record(doc) async for doc in cursor]

    async def find_active(self, workspace_id: str, key_id: str) -> ActiveKey | None:
        """The hot-path lookup behind authentication (cached by server.auth)."""
        doc = await self.col.find_one(
            {"_id": key_id, "workspaceId": workspace_id, "revokedAt": None}, ACTIVE_FIELDS
        )
        return doc and active_key(doc)

    async def get(self, workspace_id: str, key_id: str) -> dict | None:
        doc = await self.col.find_one({"_id": key_id, "workspaceId": workspace_id})
        return doc and _record(doc)

    async def touch(self, workspace_id: str, key_id: str, at: dt.datetime) -> None:
        await self.col.update_one(
            {"_id": key_id, "workspaceId": workspace_id}, {"$max": {"lastUsedAt": at}}
        )

    async def revoke(self, key_id: str) -> dict | None:
        """Operator scope (admin CLI only): revoke a key by id. Returns the record, or None."""
        await self.col.update_one(
            {"_id": key_id, "revokedAt": None}, {"$set": {"revokedAt": self.clock.now()}}
        )
        doc = await self.col.find_one({"_id": key_id})
        return doc and _record(doc)
