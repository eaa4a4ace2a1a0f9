"""Erasure requests on MongoDB (store.contract.erasures; the rules in store/erasures.py): the
request path, and the worker's claims, each a conditional find-and-update on the lease, so two
processes never hold one request at once."""

from __future__ import annotations

import datetime as dt

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from store.erasures import (
    CANDIDATES,
    COMPLETED,
    COUNTS,
    LEASE,
    OPEN,
    PENDING,
    RUNNING,
    ErasureClaim,
    claim_of,
    completed_event,
    erasure_document,
    record,
    takeable,
)
from store.idempotency import IdempotentWrite
from store.mongo.erasing import Eraser
from store.mongo.errors import translate_errors
from store.mongo.events import EventWriter
from store.mongo.idempotency import store_response
from store.mongo.paging import page_query
from store.mongo.prospect_changes import ProspectChanges
from store.paging import Page, Window

FIELDS = {"status": 1, "requestedAt": 1, "completedAt": 1, "reason": 1, "counts": 1}


@translate_errors
class Erasures:
    def __init__(self, db: AsyncDatabase, events: EventWriter, prospects: ProspectChanges) -> None:
        self.db = db
        self.col = db["erasures"]
        self.idempotency = db["idempotency"]
        self.events = events
        self.eraser = Eraser(db, events, prospects)

    async def create(
        self,
        workspace_id: str,
        hashes: dict[str, str],
        prospect_ids: list[str],
        now: dt.datetime,
        once: IdempotentWrite | None = None,
    ) -> dict:
        doc = erasure_document(workspace_id, hashes, prospect_ids, now, once)
        try:
            await self.col.insert_one(doc)
        except DuplicateKeyError:
            # An earlier attempt of this request inserted it: that request is the answer.
            found = await self.col.find_one({"_id": doc["_id"], "workspaceId": workspace_id})
            if once is None or found is None:
                raise
            doc = found
        created = record(doc)
        if once is not None:
            await store_response(self.idempotency, once, created)
        return created

    async def get(self, workspace_id: str, erasure_id: str) -> dict | None:
        doc = await self.col.find_one({"_id": erasure_id, "workspaceId": workspace_id}, FIELDS)
        return record(doc) if doc else None

    async def page(self, workspace_id: str, window: Window) -> Page:
        return await page_query(self.col, {"workspaceId": workspace_id}, window, FIELDS, record)

    async def claim(self, now: dt.datetime, token: str) -> ErasureClaim | None:
        until = now + LEASE
        found = self.col.find({"status": {"$in": list(OPEN)}, "nextAttemptAt": {"$lte": now}})
        for doc in await found.sort("nextAttemptAt", 1).limit(CANDIDATES).to_list():
            if not takeable(doc, now):
                continue
            taken = await self.col.find_one_and_update(
                {"_id": doc["_id"], "leaseToken": doc.get("leaseToken")},
                {"$set": {"status": RUNNING, "leaseToken": token, "leaseUntil": until}},
                return_document=ReturnDocument.AFTER,
            )
            if taken is not None:
                return claim_of(taken, token, until)
        return None

    async def erase_prospect(self, claim: ErasureClaim, prospect_id: str) -> list[str] | None:
        return await self.eraser.erase(claim, prospect_id)

    def _held(self, claim: ErasureClaim) -> dict:
        return {"_id": claim.id, "workspaceId": claim.workspace_id, "leaseToken": claim.token}

    async def progress(
        self, claim: ErasureClaim, confirmed: list[str], counts: dict[str, int]
    ) -> bool:
        update: dict = {
            "$inc": {f"counts.{name}": added for name, added in counts.items()},
            "$set": {"leaseUntil": self.events.now() + LEASE},  # each step renews the lease
        }
        if confirmed:
            update["$pull"] = {"recordings": {"$in": confirmed}}
        done = await self.col.update_one(self._held(claim), update)
        return bool(done.matched_count)

    async def retry_later(self, claim: ErasureClaim, at: dt.datetime) -> bool:
        done = await self.col.update_one(
            self._held(claim),
            {
                "$inc": {"attempts": 1},
                "$set": {"nextAttemptAt": at, "leaseToken": None, "leaseUntil": None},
            },
        )
        return bool(done.matched_count)

    async def finish(
        self, claim: ErasureClaim, status: str, now: dt.datetime, reason: str | None = None
    ) -> dict | None:
        doc = await self.col.find_one(self._held(claim))
        if doc is None:
            return None
        pending = self.events.begin()
        gone = [completed_event(doc, now)] if status == COMPLETED else []
        # The event's tombstone first: a worker that dies after the update leaves it to the
        # event sweep (store/mongo/events.py).
        await self.events.bury(claim.workspace_id, pending, gone)
        ended = await self.col.find_one_and_update(
            self._held(claim),
            {
                "$set": {
                    "status": status,
                    "completedAt": now,
                    "reason": reason,
                    "nextAttemptAt": None,
                    "leaseToken": None,
                    "leaseUntil": None,
                }
            },
            return_document=ReturnDocument.AFTER,
        )
        if ended is not None:
            await self.events.publish(claim.workspace_id, pending, removed=gone)
        return ended

    async def reopen_undone(self, now: dt.datetime) -> int:
        again = 0
        async for doc in self.col.find({"status": COMPLETED}):
            ws = doc["workspaceId"]
            live = doc["prospectIds"] and await self.db["prospects"].find_one(
                {"workspaceId": ws, "_id": {"$in": doc["prospectIds"]}, "deletedAt": None}
            )
            unerased = doc["callIds"] and await self.db["calls"].find_one(
                {"workspaceId": ws, "_id": {"$in": doc["callIds"]}, "erasedAt": None}
            )
            if live or unerased:
                await self.col.update_one(
                    {"_id": doc["_id"], "status": COMPLETED},
                    {
                        "$set": {
                            "status": PENDING,
                            "completedAt": None,
                            "done": [],
                            "counts": dict.fromkeys(COUNTS, 0),
                            "nextAttemptAt": now,
                            "attempts": 0,
                            "leaseToken": None,
                            "leaseUntil": None,
                        }
                    },
                )
                again += 1
        return again

    async def open_count(self) -> int:
        return await self.col.count_documents({"status": {"$in": list(OPEN)}})
