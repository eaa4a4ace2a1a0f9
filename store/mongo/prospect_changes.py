"""Changing and deleting a prospect on MongoDB (a part of store/mongo/prospects.py's Prospects).

Both hold the workspace's upload lease (store/mongo/locks.py): they change what matching reads
and what a list's members are, so they take turns with uploads.

A delete cannot change the prospect, its lists and its timeline in one write, so each step
leaves what finishes it after a crash: the lists are marked as being counted (`countPending`,
store/mongo/lists.py: the next read recounts them), the removal is buried (its event survives
the writer, store/mongo/events.py), and the tombstone write (store/tombstones.py) keeps the
lists the prospect left in `purge` until its timeline is deleted and the lists' counts are set.
A second DELETE, or the tombstone sweep (`_finish_deletes`), finishes a purge left behind.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from store.dnc import PROSPECT_FIELDS as DNC_FIELDS
from store.dnc import RESOURCE
from store.events import Removed
from store.identity import CONTACT_FIELDS
from store.mongo.dnc import listed as on_list
from store.mongo.errors import translate_errors
from store.mongo.events import MARK, TOMBSTONES
from store.mongo.lists import PENDING, mark_counting
from store.mongo.locks import UPLOAD_LEASE, Leases
from store.prospect_changes import (
    ProspectExists,
    changes_of,
    dnc_keys,
    do_not_call_changes,
    identifying,
)
from store.prospects import DERIVED
from store.prospects import record as prospect_record
from store.tombstones import PROSPECT_CLEARED, dedupe_key

if TYPE_CHECKING:
    from store.mongo.activities import Activities
    from store.mongo.events import EventWriter, Pending

PURGE = "purge"  # on a tombstone: the lists it left, until they are counted and its timeline gone
STORED = (
    dict.fromkeys(
        ("_id", "dedupeKey", *CONTACT_FIELDS, *DERIVED.values(), "ownerUserId", "listIds"), 1
    )
    | dict.fromkeys(DNC_FIELDS, 1)
    | {"createdAt": 1, "updatedAt": 1}
)


@translate_errors
class ProspectChanges:
    col: AsyncCollection
    lists: AsyncCollection
    activities: Activities
    leases: Leases
    events: EventWriter
    default_region: str

    async def update(
        self, workspace_id: str, prospect_id: str, fields: dict
    ) -> tuple[dict, bool] | None:
        live = {"_id": prospect_id, "workspaceId": workspace_id, "deletedAt": None}
        async with self.leases.held(workspace_id, UPLOAD_LEASE):
            doc = await self.col.find_one(live, STORED)
            if doc is None:
                return None
            changes = changes_of(doc, fields, self.default_region)
            # The list is read under the upload lease, which its additions and removals hold too.
            found = await on_list(self.col.database[RESOURCE], workspace_id, dnc_keys(doc, changes))
            listed = set(found)
            changes |= do_not_call_changes(doc, fields, changes, listed)
            if not changes:
                return prospect_record(doc), False
            taken = "dedupeKey" in changes and await self.col.find_one(
                {
                    "workspaceId": workspace_id,
                    "dedupeKey": changes["dedupeKey"],
                    "_id": {"$ne": prospect_id},
                },
                {"_id": 1},
            )
            if taken:
                raise ProspectExists(identifying(fields))
            now = self.events.now()
            update: dict = {"$set": {k: v for k, v in changes.items() if v is not None}}
            update["$set"]["updatedAt"] = now
            if cleared := [k for k, v in changes.items() if v is None]:
                update["$unset"] = dict.fromkeys(cleared, "")
            pending = self.events.begin()
            try:
                result = await self.col.update_one(live, pending.update(update))
            except DuplicateKeyError:  # the lease keeps uploads out: a second line of defence
                raise ProspectExists(identifying(fields)) from None
            if result.matched_count == 0:
                return None
            await self.events.publish(workspace_id, pending, {"prospects": [prospect_id]})
        changed = {**doc, **changes, "updatedAt": now}
        return prospect_record({k: v for k, v in changed.items() if v is not None}), True

    async def delete(self, workspace_id: str, prospect_id: str) -> bool | None:
        """True when it deleted the prospect, False when it was deleted already, None when no
        such prospect ever was (or its tombstone is swept)."""
        selector = {"_id": prospect_id, "workspaceId": workspace_id}
        async with self.leases.held(workspace_id, UPLOAD_LEASE):
            doc = await self.col.find_one(selector, {"deletedAt": 1, "listIds": 1, PURGE: 1})
            if doc is None:
                return None
            if doc.get("deletedAt") is not None:
                if PURGE in doc:  # a delete that stopped half-way: finish it
                    await self._purge(workspace_id, prospect_id, doc[PURGE])
                return False
            left = list(doc.get("listIds", []))
            gone = Removed("prospect", prospect_id, self.events.now())
            pending = self.events.begin()
            for list_id in left:
                await mark_counting(self.lists, workspace_id, list_id)
            await self.events.bury(workspace_id, pending, [gone])
            result = await self.col.update_one(
                {**selector, "deletedAt": None},
                {
                    "$set": {
                        "deletedAt": gone.at,
                        "updatedAt": gone.at,
                        "listIds": [],
                        "dedupeKey": dedupe_key(prospect_id),
                        PURGE: left,
                    },
                    "$unset": dict.fromkeys(PROSPECT_CLEARED, ""),
                },
            )
            if result.modified_count == 0:  # cannot be while the lease is held; be safe
                await self.events.db[TOMBSTONES].update_one(
                    {"_id": f"prospect/{prospect_id}", "workspaceId": workspace_id},
                    {"$pullAll": {MARK: pending.entries}},
                )
                return False
            await self._purge(workspace_id, prospect_id, left, pending, gone)
        return True

    async def _purge(
        self,
        workspace_id: str,
        prospect_id: str,
        left: list[str],
        pending: Pending | None = None,
        gone: Removed | None = None,
    ) -> None:
        """The rest of a delete, idempotent: the timeline deleted, the lists it left counted
        (updatedAt moved, `list.updated`) and unmarked, then `purge` removed; with the
        delete's own `pending` and `gone`, its events published."""
        pending = pending or self.events.begin()
        await self.activities.col.delete_many(
            {"workspaceId": workspace_id, "prospectId": prospect_id}
        )
        now = self.events.now()
        for list_id in left:
            members = await self.col.count_documents(
                {"workspaceId": workspace_id, "listIds": list_id}
            )
            await self.lists.update_one(
                {"_id": list_id, "workspaceId": workspace_id, "deletedAt": None},
                pending.update(
                    {
                        "$set": {"prospectsCount": members, "updatedAt": now},
                        "$unset": {PENDING: ""},
                    }
                ),
            )
        await self.events.publish(
            workspace_id, pending, {"lists": left}, removed=[gone] if gone else []
        )
        await self.col.update_one(
            {"_id": prospect_id, "workspaceId": workspace_id}, {"$unset": {PURGE: ""}}
        )

    async def _finish_deletes(self, older_than: dt.datetime, batch: int = 100) -> int:
        """Operator scope (the tombstone sweep): finish the deletes of every workspace that
        stopped half-way before `older_than`; how many."""
        cursor = self.col.find(
            {PURGE: {"$exists": True}, "deletedAt": {"$lt": older_than}},
            {"workspaceId": 1, PURGE: 1},
        ).limit(batch)
        done = 0
        async for doc in cursor:
            async with self.leases.held(doc["workspaceId"], UPLOAD_LEASE):
                again = await self.col.find_one({"_id": doc["_id"], PURGE: {"$exists": True}})
                if again is not None:
                    await self._purge(doc["workspaceId"], doc["_id"], again[PURGE])
                    done += 1
        return done
