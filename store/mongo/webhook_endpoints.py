"""Webhook endpoints on MongoDB (store.contract.WebhookEndpoints; the rules in
store/webhooks.py). Each change is one single-document write; the fan-out's lease is a token
and an instant in the endpoint's document, taken by find_one_and_update on (status, fanoutAt)
(which returns whole documents: FerretDB's findAndModify takes no projection), and the
attempts in flight hold slots there too (`slots.s<i>`: a lease's end each, see
store/mongo/webhook_deliveries.py)."""

from __future__ import annotations

import builtins
import datetime as dt

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from store.clock import new_id
from store.idempotency import IdempotentWrite
from store.mongo.errors import translate_errors
from store.mongo.idempotency import store_response
from store.paging import Position
from store.webhooks import (
    BY_REQUEST,
    DISABLED,
    ENABLED,
    FAILED,
    PENDING,
    FanoutClaim,
    current_secret,
    endpoint_changes,
    endpoint_document,
    endpoint_record,
    rotated,
)

FIELDS = {
    "url": 1,
    "eventTypes": 1,
    "description": 1,
    "status": 1,
    "disabledReason": 1,
    "disabledAt": 1,
    "createdAt": 1,
    "updatedAt": 1,
}


async def fail_pending(
    db: AsyncDatabase, workspace_id: str, endpoint_id: str, now: dt.datetime
) -> None:
    """A disabled endpoint gets no attempts: its pending deliveries fail (`recover` re-sends)."""
    await db["webhook_deliveries"].update_many(
        {"workspaceId": workspace_id, "endpointId": endpoint_id, "state": PENDING},
        {
            "$set": {"state": FAILED, "nextAttemptAt": None, "updatedAt": now},
            "$unset": {"leaseToken": "", "leaseUntil": ""},
        },
    )


@translate_errors
class WebhookEndpoints:
    def __init__(self, db: AsyncDatabase) -> None:
        self.db = db
        self.col = db["webhook_endpoints"]
        self.idempotency = db["idempotency"]

    async def create(
        self,
        workspace_id: str,
        url: str,
        event_types: list[str] | None,
        description: str | None,
        secret: str,
        now: dt.datetime,
        once: IdempotentWrite | None = None,
    ) -> dict:
        doc = {
            **endpoint_document(workspace_id, url, event_types, description, secret, now, once),
            "disabledReason": None,
            "disabledAt": None,
            "recoverAt": None,
            "recoverId": None,
            "failingSince": None,
            "slots": {},
        }
        try:
            await self.col.insert_one(doc)
        except DuplicateKeyError:
            if once is None:
                raise
            # An earlier attempt of this request inserted it: that endpoint is the answer.
            found = await self.col.find_one({"_id": doc["_id"], "workspaceId": workspace_id})
            if found is None:
                raise
            doc = found
        record = {**endpoint_record(doc), "secret": current_secret(doc["secrets"])}
        if once is not None:
            await store_response(self.idempotency, once, record)
        return record

    async def list(self, workspace_id: str) -> list[dict]:
        cursor = self.col.find({"workspaceId": workspace_id}, FIELDS).sort(
            [("createdAt", 1), ("_id", 1)]
        )
        return [endpoint_record(doc) async for doc in cursor]

    async def get(self, workspace_id: str, endpoint_id: str) -> dict | None:
        doc = await self.col.find_one({"_id": endpoint_id, "workspaceId": workspace_id}, FIELDS)
        return endpoint_record(doc) if doc else None

    async def update(
        self, workspace_id: str, endpoint_id: str, changes: dict, now: dt.datetime
    ) -> dict | None:
        found = await self.get(workspace_id, endpoint_id)
        if found is None:
            return None
        sets, disabling = endpoint_changes(found["status"], changes, now)
        if disabling:
            await self.disable(workspace_id, endpoint_id, BY_REQUEST, now)
        doc = await self.col.find_one_and_update(
            {"_id": endpoint_id, "workspaceId": workspace_id},
            {"$set": sets},
            return_document=ReturnDocument.AFTER,
        )
        return endpoint_record(doc) if doc else None

    async def delete(self, workspace_id: str, endpoint_id: str) -> bool:
        result = await self.col.delete_one({"_id": endpoint_id, "workspaceId": workspace_id})
        # Deliveries first: while they exist, a claim finds their endpoint gone and fails them.
        for name in ("webhook_deliveries", "webhook_attempts"):
            await self.db[name].delete_many(
                {"workspaceId": workspace_id, "endpointId": endpoint_id}
            )
        return result.deleted_count > 0

    async def rotate_secret(
        self,
        workspace_id: str,
        endpoint_id: str,
        secret: str,
        now: dt.datetime,
        overlap: dt.timedelta,
        once: IdempotentWrite | None = None,
    ) -> dict | None:
        doc = await self.col.find_one(
            {"_id": endpoint_id, "workspaceId": workspace_id}, {"secrets": 1, "updatedAt": 1}
        )
        if doc is None:
            return None
        # Compare-and-set on the secrets read: of two rotations at once, one rotates the other's.
        secrets = rotated(doc["secrets"], secret, now, overlap)
        updated = await self.col.find_one_and_update(
            {"_id": endpoint_id, "workspaceId": workspace_id, "secrets": doc["secrets"]},
            {"$set": {"secrets": secrets, "updatedAt": now}},
            return_document=ReturnDocument.AFTER,
        )
        if updated is None:  # rotated meanwhile by another request: rotate from that
            return await self.rotate_secret(workspace_id, endpoint_id, secret, now, overlap, once)
        record = {**endpoint_record(updated), "secret": secret}
        if once is not None:
            await store_response(self.idempotency, once, record)
        return record

    async def recover(
        self,
        workspace_id: str,
        endpoint_id: str,
        since: dt.datetime,
        now: dt.datetime,
        once: IdempotentWrite | None = None,
    ) -> bool:
        result = await self.col.update_one(
            {"_id": endpoint_id, "workspaceId": workspace_id},
            {
                "$inc": {"generation": 1},
                "$set": {"recoverAt": since, "recoverId": "", "updatedAt": now},
            },
        )
        if result.matched_count and once is not None:
            await store_response(self.idempotency, once, True)
        return result.matched_count > 0

    async def disable(
        self, workspace_id: str, endpoint_id: str, reason: str, now: dt.datetime
    ) -> None:
        result = await self.col.update_one(
            {"_id": endpoint_id, "workspaceId": workspace_id, "status": ENABLED},
            {
                "$set": {
                    "status": DISABLED,
                    "disabledReason": reason,
                    "disabledAt": now,
                    "updatedAt": now,
                }
            },
        )
        if result.modified_count:
            await fail_pending(self.db, workspace_id, endpoint_id, now)

    async def claim_fanout(
        self, now: dt.datetime, lease: dt.timedelta, limit: int
    ) -> builtins.list[FanoutClaim]:
        token, until = new_id(), now + lease
        claims = []
        for _ in range(limit):
            doc = await self.col.find_one_and_update(
                {"status": ENABLED, "fanoutAt": {"$lte": now}},
                {"$set": {"fanoutAt": until, "fanoutToken": token}},
                sort=[("status", 1), ("fanoutAt", 1)],
                return_document=ReturnDocument.AFTER,
            )
            if doc is None:
                break
            recover_from = (
                Position(doc["recoverAt"], doc.get("recoverId") or "")
                if doc.get("recoverAt") is not None
                else None
            )
            claims.append(
                FanoutClaim(
                    doc["workspaceId"],
                    doc["_id"],
                    doc.get("eventTypes"),
                    Position(doc["positionAt"], doc["positionId"]),
                    recover_from,
                    doc.get("generation", 0),
                    token,
                    until,
                )
            )
        return claims

    async def advance(self, claim: FanoutClaim, position: Position) -> bool:
        result = await self.col.update_one(
            _held(claim), {"$set": {"positionAt": position.value, "positionId": position.id}}
        )
        return result.matched_count > 0

    async def advance_recovery(self, claim: FanoutClaim, recover_from: Position | None) -> bool:
        result = await self.col.update_one(
            {**_held(claim), "generation": claim.generation},
            {
                "$set": {
                    "recoverAt": recover_from.value if recover_from else None,
                    "recoverId": recover_from.id if recover_from else None,
                }
            },
        )
        return result.matched_count > 0

    async def release_fanout(self, claim: FanoutClaim, next_at: dt.datetime) -> None:
        await self.col.update_one(
            _held(claim), {"$set": {"fanoutAt": next_at}, "$unset": {"fanoutToken": ""}}
        )


def _held(claim: FanoutClaim) -> dict:
    return {"_id": claim.endpoint_id, "workspaceId": claim.workspace_id, "fanoutToken": claim.token}
