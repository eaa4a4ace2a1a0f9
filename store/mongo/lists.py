"""Dialer lists: creation, paging, lookup, and the prospectsCount counter."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase

from store.clock import new_id, utcnow
from store.mongo.errors import translate_errors
from store.mongo.paging import page_query
from store.paging import Page, Window
from store.records import LIST_FIELDS
from store.records import list_record as _record

if TYPE_CHECKING:
    from store.mongo.events import EventWriter


@translate_errors
class Lists:
    def __init__(self, db: AsyncDatabase, events: EventWriter) -> None:
        self.col = db["lists"]
        self.events = events

    async def create(
        self,
        workspace_id: str,
        name: str,
        owner_user_id: str,
        source: str = "CSV",
        created_at: dt.datetime | None = None,
        list_id: str | None = None,
    ) -> dict:
        now = created_at or utcnow()
        doc = {
            "_id": list_id or new_id(),
            "workspaceId": workspace_id,
            "name": name,
            "source": source,
            "ownerUserId": owner_user_id,
            "createdAt": now,
            "updatedAt": now,
            "prospectsCount": 0,
        }
        pending = self.events.begin()
        await self.col.insert_one(pending.new(doc))
        await self.events.publish(workspace_id, pending, {"lists": [str(doc["_id"])]})
        return _record(doc)

    async def get(self, workspace_id: str, list_id: str) -> dict | None:
        doc = await self.col.find_one({"_id": list_id, "workspaceId": workspace_id}, LIST_FIELDS)
        return doc and _record(doc)

    async def page(self, workspace_id: str, window: Window, *, encoded: bool = False) -> Page:
        """One window of lists; dicts even when `encoded` is asked for (see Calls.page)."""
        return await page_query(
            self.col, {"workspaceId": workspace_id}, window, LIST_FIELDS, _record
        )

    async def set_count(self, workspace_id: str, list_id: str, members: int) -> dict | None:
        """Record the list's counted number of prospects and move updatedAt; returns the list.

        The count comes from the memberships themselves (Prospects.count_in_list), so an upload
        interrupted before this update leaves no lasting drift: the next upload recounts.
        Members are never removed, so `$max` keeps an upload that finishes late from
        overwriting a later upload's larger count.
        """
        pending = self.events.begin()
        doc = await self.col.find_one_and_update(
            {"_id": list_id, "workspaceId": workspace_id},
            pending.update({"$max": {"prospectsCount": members}, "$set": {"updatedAt": utcnow()}}),
            # No projection: FerretDB 1.24 does not implement findAndModify's `fields`.
            return_document=ReturnDocument.AFTER,
        )
        if doc is None:
            return None
        await self.events.publish(workspace_id, pending, {"lists": [list_id]})
        return _record(doc)
