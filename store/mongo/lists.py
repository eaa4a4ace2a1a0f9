"""Dialer lists: creation, paging, lookup, and the prospectsCount counter.

A contact upload cannot add memberships and move the list's count in one write (no
multi-document transactions), so it marks the list first (`countPending`, a token of the
upload), adds the memberships, then sets the count from them and removes its mark. An upload
cut short in between leaves the mark: the next read of the list counts its memberships and
corrects `prospectsCount` (to a larger count at any time, to the exact one while no upload or
delete holds the workspace's upload lease), and removes the mark once none does. A prospect's
delete marks the lists it leaves the same way (store/mongo/prospect_changes.py). So
`prospectsCount` is exact after a crash at any point of an upload or a delete, without waiting
for a retry. A removal of contacts (store/mongo/memberships.py), which takes the uploads' turn,
sets the count it counted itself, lower.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from pymongo import ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from store.clock import new_id
from store.exports import BATCH_SIZE
from store.idempotency import IdempotentWrite
from store.lists import Removal, list_changes
from store.mongo.errors import translate_errors
from store.mongo.exports import export_batches
from store.mongo.idempotency import store_response
from store.mongo.locks import UPLOAD_LEASE, Leases
from store.mongo.memberships import Memberships
from store.mongo.paging import page_query
from store.paging import Page, Window
from store.records import LIST_FIELDS, list_document
from store.records import list_record as _record
from store.tombstones import either_record

PENDING = "countPending"  # the token of an upload that has not set the count yet
FIELDS = {**LIST_FIELDS, PENDING: 1}  # what reads of lists take: the record and the mark

if TYPE_CHECKING:
    from store.mongo.events import EventWriter


@translate_errors
class Lists:
    def __init__(self, db: AsyncDatabase, events: EventWriter) -> None:
        self.col = db["lists"]
        self.prospects = db["prospects"]
        self.idempotency = db["idempotency"]
        self.leases = Leases(db)
        self.events = events
        self.memberships = Memberships(db, events)

    async def create(
        self,
        workspace_id: str,
        name: str,
        owner_user_id: str,
        source: str = "CSV",
        created_at: dt.datetime | None = None,
        list_id: str | None = None,
        once: IdempotentWrite | None = None,
    ) -> dict:
        """Insert a list. With an Idempotency-Key its id derives from the key: when an earlier
        attempt of the same request inserted it, that list is the answer."""
        doc = list_document(
            workspace_id,
            name,
            owner_user_id,
            source,
            created_at or self.events.now(),
            list_id,
            once,
        )
        pending = self.events.begin()
        try:
            await self.col.insert_one(pending.new(doc))
        except DuplicateKeyError:
            if once is None:
                raise
            found = await self.col.find_one({"_id": doc["_id"], "workspaceId": workspace_id})
            if found is None:  # the id of another workspace's list: cannot be (uuid5 of ours)
                raise
            # An earlier attempt inserted it; its marker (or its event) is that attempt's.
            doc = found
        else:
            await self.events.publish(workspace_id, pending, {"lists": [str(doc["_id"])]})
        record = _record(doc)
        if once is not None:
            await store_response(self.idempotency, once, record)
        return record

    async def get(self, workspace_id: str, list_id: str) -> dict | None:
        doc = await self.col.find_one(
            {"_id": list_id, "workspaceId": workspace_id, "deletedAt": None}, FIELDS
        )
        if doc is not None and PENDING in doc:
            doc = await self._recount(workspace_id, doc) or doc
        return doc and _record(doc)

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        updated_since: dt.datetime | None = None,
        encoded: bool = False,
        include_deleted: bool = False,
    ) -> Page:
        """One window of lists; dicts even when `encoded` is asked for (see Calls.page). A
        list an upload left marked is recounted first (its count and updatedAt move, with its
        event), and the window read again: a healed list shows as it is stored, in its new
        place in the order."""
        pending: list[dict] = []
        shown = either_record(_record)  # with include_deleted: tombstones in their own form

        def record(doc: dict) -> dict:
            if PENDING in doc and not doc.get("deletedAt"):
                pending.append(doc)
            return shown(doc)

        query = _query(workspace_id, updated_since)
        fields = FIELDS
        if include_deleted:
            del query["deletedAt"]
            fields = {**FIELDS, "deletedAt": 1}
        page = await page_query(self.col, query, window, fields, record)
        if not pending:
            return page
        for doc in pending:
            await self._recount(workspace_id, doc)
        # Once: a list still marked is one an upload is adding to now (it sets the count).
        return await page_query(self.col, query, window, fields, shown)

    async def _recount(self, workspace_id: str, doc: dict) -> dict | None:
        """Correct the count of a list an upload has marked (see the module's docstring): the
        list as it is now, or None when it is gone."""
        list_id = doc["_id"]
        members = await self.prospects.count_documents(
            {"workspaceId": workspace_id, "listIds": list_id}
        )
        # Members leave a list only under the upload lease (a prospect's delete), so while it
        # is free the count is exact; while it is taken, only a larger count is certain.
        counted = doc["prospectsCount"]
        free = not await self.leases.taken(workspace_id, UPLOAD_LEASE)
        if members > counted or (free and members != counted):
            pending = self.events.begin()
            await self.col.update_one(
                {"_id": list_id, "workspaceId": workspace_id, "prospectsCount": counted},
                pending.update(
                    {"$set": {"prospectsCount": members, "updatedAt": self.events.now()}}
                ),
            )
            await self.events.publish(workspace_id, pending, {"lists": [list_id]})
        if free:
            await self.col.update_one(
                {"_id": list_id, "workspaceId": workspace_id, PENDING: doc[PENDING]},
                {"$unset": {PENDING: ""}},
            )
        return await self.col.find_one(
            {"_id": list_id, "workspaceId": workspace_id, "deletedAt": None}, FIELDS
        )

    async def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = BATCH_SIZE,
        updated_since: dt.datetime | None = None,
    ) -> AsyncGenerator[list[dict], None]:
        """The lists last changed at or before `settled_before`, in the sync order, in batches
        of records. A list an upload left marked is recounted first, as `page` does: if that
        moves it past `settled_before`, it is left to the sync that follows the export."""
        async for docs in export_batches(
            self.col,
            _query(workspace_id, updated_since),
            "updatedAt",
            settled_before,
            FIELDS,
            dict,
            batch_size,
        ):
            batch = []
            for doc in docs:
                if PENDING in doc:
                    healed = await self._recount(workspace_id, doc)
                    if healed is None or healed["updatedAt"] > settled_before:
                        continue
                    doc = healed
                batch.append(_record(doc))
            yield batch

    async def update(
        self, workspace_id: str, list_id: str, fields: dict
    ) -> tuple[dict, bool] | None:
        """Set `name` and/or `ownerUserId`: one marked single-document write, its event after."""
        selector = {"_id": list_id, "workspaceId": workspace_id, "deletedAt": None}
        doc = await self.col.find_one(selector, FIELDS)
        if doc is None:
            return None
        changes = list_changes(doc, fields)
        if not changes:
            return _record(doc), False
        changes["updatedAt"] = self.events.now()
        pending = self.events.begin()
        changed = await self.col.find_one_and_update(
            selector,
            pending.update({"$set": changes}),
            return_document=ReturnDocument.AFTER,
        )
        if changed is None:
            return None
        await self.events.publish(workspace_id, pending, {"lists": [list_id]})
        return _record(changed), True

    async def remove_members(
        self,
        workspace_id: str,
        listing: dict,
        prospect_ids: list[str],
        once: IdempotentWrite | None = None,
    ) -> Removal:
        """Take prospects out of `listing` (store/mongo/memberships.py)."""
        return await self.memberships.remove(workspace_id, listing, prospect_ids, once)

    async def delete(self, workspace_id: str, list_id: str) -> bool | None:
        """Make the list a tombstone with its purge to come (store/mongo/memberships.py)."""
        return await self.memberships.delete(workspace_id, list_id)

    async def purge(self, batch: int) -> int:
        """One unit of the lists' background work (store/mongo/memberships.py)."""
        return await self.memberships.resume() or await self.memberships.purge(batch)

    async def set_count(self, workspace_id: str, list_id: str, members: int) -> dict | None:
        """Record the list's counted number of prospects and move updatedAt; returns the list.

        The count comes from the memberships themselves (Prospects.count_in_list). `$max` keeps
        an upload that finishes late from overwriting a later upload's larger count (members
        leave a list only under the upload lease: a removal of contacts sets its own count,
        store/mongo/memberships.py).
        """
        pending = self.events.begin()
        doc = await self.col.find_one_and_update(
            {"_id": list_id, "workspaceId": workspace_id, "deletedAt": None},
            pending.update(
                {"$max": {"prospectsCount": members}, "$set": {"updatedAt": self.events.now()}}
            ),
            # No projection: FerretDB 1.24 does not implement findAndModify's `fields`.
            return_document=ReturnDocument.AFTER,
        )
        if doc is None:
            return None
        await self.events.publish(workspace_id, pending, {"lists": [list_id]})
        return _record(doc)


async def mark_counting(col: AsyncCollection, workspace_id: str, list_id: str) -> str:
    """Mark the list (in `col`, the lists) as being added to by an upload; the mark's token."""
    token = new_id()
    await col.update_one({"_id": list_id, "workspaceId": workspace_id}, {"$set": {PENDING: token}})
    return token


async def set_counted(
    col: AsyncCollection,
    events: EventWriter,
    workspace_id: str,
    list_id: str,
    token: str,
    members: int,
) -> None:
    """After an upload: the list's count from its `members` (never decreasing), its updatedAt
    moved, and the upload's mark removed (if another mark replaced it, that one stays); its
    `list.updated` event."""
    selector = {"_id": list_id, "workspaceId": workspace_id}
    pending = events.begin()
    change = pending.update(
        {"$max": {"prospectsCount": members}, "$set": {"updatedAt": events.now()}}
    )
    marked = await col.update_one({**selector, PENDING: token}, {**change, "$unset": {PENDING: ""}})
    if not marked.matched_count:
        await col.update_one(selector, change)
    await events.publish(workspace_id, pending, {"lists": [list_id]})


def _query(workspace_id: str, updated_since: dt.datetime | None) -> dict:
    """The query of GET /lists: the workspace, not deleted, and updatedAt >= since."""
    query: dict = {"workspaceId": workspace_id, "deletedAt": None}
    if updated_since is not None:
        query["updatedAt"] = {"$gte": updated_since}
    return query
