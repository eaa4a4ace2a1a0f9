"""Erasure requests on MongoDB (store.contract.erasures; the rules in store/erasures.py): the
request path, and the worker's claims, each a conditional find-and-update on the lease, so two
processes never hold one request at once."""

from __future__ import annotations

import datetime as dt

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from store.erasures import LEASE, OPEN, RUNNING, ErasureClaim, erasure_document, record
from store.idempotency import IdempotentWrite
from store.mongo.errors import translate_errors
from store.mongo.idempotency import store_response
from store.mongo.paging import page_query
from store.paging import Page, Window

FIELDS = {"status": 1, "requestedAt": 1, "completedAt": 1, "reason": 1, "counts": 1}


@translate_errors
class Erasures:
    def __init__(self, db: AsyncDatabase) -> None:
        self.col = db["erasures"]
        self.idempotency = db["idempotency"]

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
        doc = await self.col.find_one_and_update(
            {
                "status": {"$in": list(OPEN)},
                "nextAttemptAt": {"$lte": now},
                "$or": [{"leaseUntil": None}, {"leaseUntil": {"$lte": now}}],
            },
            {"$set": {"status": RUNNING, "leaseToken": token, "leaseUntil": until}},
            sort=[("nextAttemptAt", 1)],
            return_document=ReturnDocument.AFTER,
        )
        if doc is None:
            return None
        return ErasureClaim(
            doc["workspaceId"],
            doc["_id"],
            token,
            until,
            doc["prospectIds"],
            doc["recordings"],
            doc["attempts"],
        )

    def _held(self, claim: ErasureClaim) -> dict:
        return {"_id": claim.id, "workspaceId": claim.workspace_id, "leaseToken": claim.token}

    async def progress(
        self,
        claim: ErasureClaim,
        *,
        prospect_id: str | None = None,
        counts: dict[str, int] | None = None,
        call_ids: list[str] | None = None,
        recordings: list[str] | None = None,
        confirmed: list[str] | None = None,
    ) -> bool:
        update: dict = {}
        if prospect_id is not None or confirmed:
            update["$pull"] = {}
            if prospect_id is not None:
                update["$pull"]["prospectIds"] = prospect_id
            if confirmed:
                update["$pull"]["recordings"] = {"$in": confirmed}
        if counts:
            update["$inc"] = {f"counts.{name}": added for name, added in counts.items()}
        added = {}
        if call_ids:
            added["callIds"] = {"$each": call_ids}
        if recordings:
            added["recordings"] = {"$each": recordings}
        if added:
            update["$addToSet"] = added
        if not update:
            return bool(await self.col.count_documents(self._held(claim), limit=1))
        if "$pull" in update and "$addToSet" in update:
            # One field may not be both pulled and added in one update: two updates.
            pulled = await self.col.update_one(self._held(claim), {"$pull": update.pop("$pull")})
            if not pulled.matched_count:
                return False
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
        return await self.col.find_one_and_update(
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
