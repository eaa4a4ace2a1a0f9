"""API key records. The plain key (a signed JWT) is never stored: only its id and metadata."""

from __future__ import annotations

from pymongo.asynchronous.database import AsyncDatabase

from store.clock import new_id, utcnow
from store.mongo.errors import translate_errors
from store.records import key_record as _record


@translate_errors
class Keys:
    def __init__(self, db: AsyncDatabase) -> None:
        self.col = db["api_keys"]

    async def create(self, workspace_id: str, name: str) -> dict:
        doc = {
            "_id": new_id(),
            "workspaceId": workspace_id,
            "name": name,
            "createdAt": utcnow(),
            "revokedAt": None,
        }
        await self.col.insert_one(doc)
        return _record(doc)

    async def list(self, workspace_id: str) -> list[dict]:
        cursor = self.col.find({"workspaceId": workspace_id}).sort("createdAt", 1)
        return [_record(doc) async for doc in cursor]

    async def is_active(self, workspace_id: str, key_id: str) -> bool:
        """The hot-path check behind authentication (cached by server.auth)."""
        doc = await self.col.find_one(
            {"_id": key_id, "workspaceId": workspace_id, "revokedAt": None}, {"_id": 1}
        )
        return doc is not None

    async def revoke(self, key_id: str) -> dict | None:
        """Operator scope (admin CLI only): revoke a key by id. Returns the record, or None."""
        await self.col.update_one(
            {"_id": key_id, "revokedAt": None}, {"$set": {"revokedAt": utcnow()}}
        )
        doc = await self.col.find_one({"_id": key_id})
        return doc and _record(doc)
