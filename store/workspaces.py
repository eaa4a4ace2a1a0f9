"""Workspaces: the tenants. Created by operators through the admin CLI."""

from __future__ import annotations

from store.clock import new_id, utcnow


class Workspaces:
    def __init__(self, db):
        self.col = db["workspaces"]

    async def create(self, name: str, workspace_id: str | None = None, created_at=None) -> dict:
        doc = {"_id": workspace_id or new_id(), "name": name, "createdAt": created_at or utcnow()}
        await self.col.insert_one(doc)
        return {"id": doc["_id"], "name": name, "createdAt": doc["createdAt"]}

    async def get(self, workspace_id: str) -> dict | None:
        doc = await self.col.find_one({"_id": workspace_id})
        return doc and {"id": doc["_id"], "name": doc["name"], "createdAt": doc["createdAt"]}
