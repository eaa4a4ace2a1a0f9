"""Workspace users (the people who dial). Deleted users keep their record with deletedAt set."""

from __future__ import annotations

import builtins
import datetime as dt

from pymongo.asynchronous.database import AsyncDatabase

from store.clock import SYSTEM_CLOCK, Clock
from store.mongo.errors import translate_errors
from store.records import admin_user_record, user_document
from store.records import user_record as _record

USER_FIELDS = {"_id": 1, "email": 1, "firstName": 1, "lastName": 1, "createdAt": 1}


@translate_errors
class Users:
    def __init__(self, db: AsyncDatabase, clock: Clock = SYSTEM_CLOCK) -> None:
        self.col = db["users"]
        self.clock = clock

    async def create(
        self,
        workspace_id: str,
        email: str,
        first_name: str,
        last_name: str,
        created_at: dt.datetime | None = None,
        user_id: str | None = None,
    ) -> dict:
        doc = user_document(
            workspace_id, email, first_name, last_name, created_at or self.clock.now(), user_id
        )
        await self.col.insert_one(doc)
        return _record(doc)

    async def list_active(self, workspace_id: str) -> list[dict]:
        cursor = self.col.find({"workspaceId": workspace_id, "deletedAt": None}, USER_FIELDS)
        cursor = cursor.sort([("createdAt", 1), ("_id", 1)])
        return [_record(doc) async for doc in cursor]

    async def is_active(self, workspace_id: str, user_id: str) -> bool:
        doc = await self.col.find_one(
            {"_id": user_id, "workspaceId": workspace_id, "deletedAt": None}, {"_id": 1}
        )
        return doc is not None

    async def delete(self, workspace_id: str, user_id: str) -> bool:
        result = await self.col.update_one(
            {"_id": user_id, "workspaceId": workspace_id, "deletedAt": None},
            {"$set": {"deletedAt": self.clock.now()}},
        )
        return result.modified_count == 1

    async def workspace_of(self, user_id: str) -> str | None:
        """Operator scope (admin CLI only): which workspace a user id belongs to."""
        doc = await self.col.find_one({"_id": user_id}, {"workspaceId": 1})
        return doc and doc["workspaceId"]

    async def list(self, workspace_id: str, include_deleted: bool = False) -> builtins.list[dict]:
        """The workspace's users with their deletedAt, oldest first (admin CLI)."""
        query: dict = {"workspaceId": workspace_id}
        if not include_deleted:
            query["deletedAt"] = None
        cursor = self.col.find(query).sort([("createdAt", 1), ("_id", 1)])
        return [admin_user_record(doc) async for doc in cursor]
