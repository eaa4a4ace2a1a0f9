"""Taking prospects out of a list on MongoDB, without multi-document transactions:
POST /lists/{id}/contacts/remove.

The removal is written first as a unit of work (`list_removals`: the list, the members to
take out, the removal's id and a lease until which its writer owns it), then carried out by
steps that are each idempotent: the `list_removed` activities (ids derived from the removal's
id and the prospect, upserted), the members' `listIds` pulled (only while the list is still in
them) with their updatedAt, the list's prospectsCount counted and set, and the unit deleted.
Every write is marked (store/mongo/events.py), so a writer that dies leaves its events to the
event sweeper; the unit itself, once its lease lapses, is taken over and finished by the lists'
background work (server/list_work.py) on any process. Removals and uploads of a workspace take
turns through its upload lease, so the count they set is exact.

DELETE /lists/{id} buries the list's `list.deleted` event (a marked tombstone, as every
removal does), then makes the list a tombstone (store/tombstones.py) in one single-document
write that also sets `purgeAt`: from then on the list's members are to lose it. The lists'
background work claims such a list (`purgeAt` moved ahead by a lease), pulls the list from up
to a batch of members' `listIds` (marked, their `prospect.updated` published), and gives the
list back (`purgeAt` now) until no member is left, when `purgeAt` goes. A process that dies
mid-way leaves `purgeAt`, so another process, or the same one restarted, takes the list over
once the lease lapses; each member's change is one single-document write, never half done."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from pymongo import ReturnDocument, UpdateOne
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from store.activities import list_removed_activity
from store.clock import new_id
from store.events import Removed
from store.idempotency import IdempotentWrite
from store.lists import Removal, removal_results
from store.mongo.events import chunks
from store.mongo.idempotency import store_response
from store.mongo.locks import UPLOAD_LEASE, Leases

if TYPE_CHECKING:
    from store.mongo.events import EventWriter

REMOVALS = "list_removals"
# How long the writer of a removal owns it before the background work may take it over.
LEASE = dt.timedelta(seconds=60)
# How long a process owns a deleted list between two batches of its purge (each batch gives it
# back): another process takes a dead one's list over after this. A batch done twice by two
# processes changes each member once (the pull matches only members that still have the list).
PURGE_LEASE = dt.timedelta(seconds=10)


class Memberships:
    """Removals of prospects from lists (the module's docstring)."""

    def __init__(self, db: AsyncDatabase, events: EventWriter) -> None:
        self.removals = db[REMOVALS]
        self.prospects = db["prospects"]
        self.lists = db["lists"]
        self.activities = db["activities"]
        self.idempotency = db["idempotency"]
        self.leases = Leases(db)
        self.events = events

    async def remove(
        self,
        workspace_id: str,
        listing: dict,
        prospect_ids: list[str],
        once: IdempotentWrite | None = None,
    ) -> Removal:
        list_id = listing["id"]
        wanted = list(dict.fromkeys(prospect_id.lower() for prospect_id in prospect_ids))
        async with self.leases.held(workspace_id, UPLOAD_LEASE):
            cursor = self.prospects.find(
                {"workspaceId": workspace_id, "_id": {"$in": wanted}, "listIds": list_id},
                {"_id": 1},
            )
            members = [doc["_id"] async for doc in cursor]
            if members:
                now = self.events.now()
                work = {
                    "_id": once.record_id("removal") if once else new_id(),
                    "workspaceId": workspace_id,
                    "listId": list_id,
                    "listName": listing["name"],
                    "members": members,
                    "at": now,
                    "until": now + LEASE,
                }
                try:
                    await self.removals.insert_one(work)
                except DuplicateKeyError:  # an earlier attempt of this request recorded it
                    work = await self.removals.find_one({"_id": work["_id"]}) or work
                await self._carry_out(work)
            count = await self._count(workspace_id, list_id, changed=bool(members))
        removal = Removal(len(members), count, removal_results(prospect_ids, set(members)))
        if once is not None:
            await store_response(self.idempotency, once, removal)
        return removal

    async def resume(self) -> int:
        """Take over one removal whose writer's lease lapsed (a writer that died) and finish
        it; how many members it named (0: none was waiting)."""
        now = self.events.now()
        work = await self.removals.find_one_and_update(
            {"until": {"$lte": now}},
            {"$set": {"until": now + LEASE}},
            return_document=ReturnDocument.AFTER,
        )
        if work is None:
            return 0
        async with self.leases.held(work["workspaceId"], UPLOAD_LEASE):
            await self._carry_out(work)
            await self._count(work["workspaceId"], work["listId"], changed=True)
        return len(work["members"])

    async def _carry_out(self, work: dict) -> None:
        """Every step of a removal after it was recorded, each idempotent; the unit deleted
        last (its count is set by the caller, holding the upload lease)."""
        workspace_id, list_id, at = work["workspaceId"], work["listId"], work["at"]
        pending = self.events.begin()
        docs = [
            list_removed_activity(
                workspace_id, member, list_id, work["listName"], at, str(work["_id"])
            )
            for member in work["members"]
        ]
        written = await self.activities.bulk_write(
            [
                UpdateOne(
                    {"_id": doc["_id"], "workspaceId": workspace_id},
                    {"$setOnInsert": pending.new(doc)},
                    upsert=True,
                )
                for doc in docs
            ],
            ordered=False,
        )
        inserted = set((written.upserted_ids or {}).values())
        for part in chunks(work["members"]):
            await self.prospects.bulk_write(
                [
                    UpdateOne(
                        {"_id": member, "workspaceId": workspace_id, "listIds": list_id},
                        pending.update({"$pull": {"listIds": list_id}, "$set": {"updatedAt": at}}),
                    )
                    for member in part
                ],
                ordered=False,
            )
        added = [doc for doc in docs if doc["_id"] in inserted]
        await self.events.publish(workspace_id, pending, {"prospects": work["members"]}, added)
        await self.removals.delete_one({"_id": work["_id"], "workspaceId": workspace_id})

    async def _count(self, workspace_id: str, list_id: str, *, changed: bool) -> int:
        """The list's prospectsCount counted from its members and, when `changed`, set (its
        updatedAt moved, `list.updated`); call it holding the upload lease."""
        count = await self.prospects.count_documents(
            {"workspaceId": workspace_id, "listIds": list_id}
        )
        if changed:
            pending = self.events.begin()
            result = await self.lists.update_one(
                {"_id": list_id, "workspaceId": workspace_id},
                pending.update({"$set": {"prospectsCount": count, "updatedAt": self.events.now()}}),
            )
            if result.matched_count:
                await self.events.publish(workspace_id, pending, {"lists": [list_id]})
        return count

    async def delete(self, workspace_id: str, list_id: str) -> bool | None:
        """Make the list a tombstone with its purge to come: True; False when it was deleted
        already; None when the workspace has no such list."""
        selector = {"_id": list_id, "workspaceId": workspace_id}
        found = await self.lists.find_one(selector, {"deletedAt": 1})
        if found is None:
            return None
        if found.get("deletedAt") is not None:
            return False
        gone = Removed("list", list_id, self.events.now())
        pending = self.events.begin()
        await self.events.bury(workspace_id, pending, [gone])
        result = await self.lists.update_one(
            {**selector, "deletedAt": None},
            {"$set": {"deletedAt": gone.at, "updatedAt": gone.at, "purgeAt": gone.at}},
        )
        if result.modified_count == 0:  # another delete came first: its event is the one
            await self.events.db["tombstones"].update_one(
                {"_id": f"list/{list_id}", "workspaceId": workspace_id},
                {"$pullAll": {"_evt": pending.entries}},
            )
            return False
        await self.events.publish(workspace_id, pending, removed=[gone])
        return True

    async def purge(self, batch: int) -> int:
        """One unit of a deleted list's purge (any workspace's): up to `batch` members lose the
        list, with their events. How many members it changed, or 1 for a purge it closed; 0
        when no list is waiting."""
        now = self.events.now()
        claimed = now + PURGE_LEASE
        doc = await self.lists.find_one_and_update(
            {"purgeAt": {"$lte": now}},
            {"$set": {"purgeAt": claimed}},
            return_document=ReturnDocument.AFTER,
        )
        if doc is None:
            return 0
        workspace_id, list_id = doc["workspaceId"], doc["_id"]
        mine = {"_id": list_id, "workspaceId": workspace_id, "purgeAt": claimed}
        cursor = self.prospects.find(
            {"workspaceId": workspace_id, "listIds": list_id}, {"_id": 1}
        ).limit(batch)
        members = [found["_id"] async for found in cursor]
        if not members:
            await self.lists.update_one(mine, {"$unset": {"purgeAt": ""}})
            return 1
        pending = self.events.begin()
        for part in chunks(members):
            await self.prospects.bulk_write(
                [
                    UpdateOne(
                        {"_id": member, "workspaceId": workspace_id, "listIds": list_id},
                        pending.update({"$pull": {"listIds": list_id}, "$set": {"updatedAt": now}}),
                    )
                    for member in part
                ],
                ordered=False,
            )
        await self.events.publish(workspace_id, pending, {"prospects": members})
        await self.lists.update_one(mine, {"$set": {"purgeAt": self.events.now()}})
        return len(members)
