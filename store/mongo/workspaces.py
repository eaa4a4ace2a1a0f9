"""Workspaces: the tenants. Created by operators through the admin CLI."""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Sequence

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase

import store.mongo.workspace_deletion as deletion
from store.clock import SYSTEM_CLOCK, Clock
from store.mongo.errors import translate_errors
from store.records import workspace_document, workspace_record


@translate_errors
class Workspaces:
    def __init__(self, db: AsyncDatabase, clock: Clock = SYSTEM_CLOCK) -> None:
        self.db = db
        self.col = db["workspaces"]
        self.clock = clock

    async def create(
        self, name: str, workspace_id: str | None = None, created_at: dt.datetime | None = None
    ) -> dict:
        doc = workspace_document(name, workspace_id, created_at or self.clock.now())
        await self.col.insert_one(doc)
        return workspace_record(doc)

    async def get(self, workspace_id: str) -> dict | None:
        """The workspace's record; None when there is none, or it is being deleted."""
        doc = await self.col.find_one({"_id": workspace_id, "deletingAt": None})
        return doc and workspace_record(doc)

    async def list(self) -> list[dict]:
        """Operator scope (admin CLI, demo): every workspace, oldest first."""
        cursor = self.col.find({}).sort([("createdAt", 1), ("_id", 1)])
        return [workspace_record(doc) async for doc in cursor]

    async def rename(self, workspace_id: str, name: str) -> dict | None:
        """Operator scope (admin CLI only): the workspace's new record, or None."""
        doc = await self.col.find_one_and_update(
            {"_id": workspace_id}, {"$set": {"name": name}}, return_document=ReturnDocument.AFTER
        )
        return doc and workspace_record(doc)

    async def update_settings(self, workspace_id: str, changes: dict) -> dict | None:
        """Operator scope (admin CLI only): set the settings named in `changes` (None removes
        one: the default applies again); the workspace's new record, or None."""
        sets = {f"settings.{name}": value for name, value in changes.items() if value is not None}
        unsets = {f"settings.{name}": "" for name, value in changes.items() if value is None}
        update = {key: value for key, value in (("$set", sets), ("$unset", unsets)) if value}
        if not update:
            return await self.get(workspace_id)
        doc = await self.col.find_one_and_update(
            {"_id": workspace_id}, update, return_document=ReturnDocument.AFTER
        )
        return doc and workspace_record(doc)

    # -- deleting a workspace (store/workspace_deletion.py) -------------------------------------
    async def find(self, workspace_id: str) -> dict | None:
        return await deletion.find(self.db, workspace_id)

    async def begin_delete(self, workspace_id: str, now: dt.datetime) -> dict | None:
        return await deletion.begin(self.db, workspace_id, now)

    async def recordings(
        self, workspace_id: str, after: str, limit: int
    ) -> builtins.list[tuple[str, str]]:
        return await deletion.recordings(self.db, workspace_id, after, limit)

    async def forget_recordings(self, workspace_id: str, keys: Sequence[str]) -> None:
        await deletion.forget_recordings(self.db, workspace_id, list(keys))

    async def purge(self, workspace_id: str, batch: int = 1000) -> int:
        return await deletion.purge(self.db, workspace_id, batch)

    async def remove(self, workspace_id: str) -> bool:
        return await deletion.remove(self.db, workspace_id)
