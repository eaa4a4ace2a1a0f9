"""Webhook deliveries and their attempts on MongoDB (store.contract.WebhookDeliveries; the
rules in store/webhooks.py), without multi-document transactions:

- a delivery is inserted with its deterministic `_id`, so inserting it twice is a no-op;
- a claim first takes a free slot of the endpoint (`slots.s<i>` in its document, `i` below
  `per_endpoint`, free when absent or past its lease's end) by a compare-and-set on that one
  field, then the delivery by a conditional update on (state, nextAttemptAt): so no endpoint
  ever has more than `per_endpoint` attempts in flight across every process, and an attempt
  whose process died frees its slot and becomes due again when its lease ends;
- a claim goes endpoint by endpoint, never through a backlog: it walks the endpoints that have
  pending deliveries on the (state, endpointId, nextAttemptAt) index, one seek each (which
  finds the endpoint's earliest pending delivery: due or not), round from where the previous
  claim stopped, so every endpoint gets its turn; a due one with free slots has as many of its
  earliest due deliveries read from its own keys of that index (one range), each then taken by
  a conditional update on its `_id`. An endpoint whose slots are all taken costs its seek and
  the read of its document.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from pymongo import UpdateOne
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from store.clock import new_id
from store.events import StoredEvent, first_id_at, id_at
from store.mongo.errors import translate_errors
from store.paging import Position
from store.webhooks import (
    DELIVERED,
    ENABLED,
    FAILED,
    PENDING,
    Attempt,
    AttemptPage,
    Claim,
    attempt_page,
    delivery_id,
    lease_token,
    secrets_at,
)

DUPLICATE_KEY = 11000
# Endpoints with pending deliveries that one claim looks at, at most (the next claim goes on
# from where it stopped).
SCAN = 64
ENDPOINT_FIELDS = {
    "workspaceId": 1,
    "url": 1,
    "secrets": 1,
    "status": 1,
    "failingSince": 1,
    "slots": 1,
}


def _free_slot(slots: dict, per_endpoint: int, now: dt.datetime) -> tuple[str, object] | None:
    """A slot of the endpoint free at `now` and the value it holds (None: absent)."""
    for index in range(per_endpoint):
        name = f"s{index}"
        held = slots.get(name)
        if held is None or held <= now:
            return name, held
    return None


@translate_errors
class WebhookDeliveries:
    def __init__(self, db: AsyncDatabase) -> None:
        self.db = db
        self.col = db["webhook_deliveries"]
        self.attempts = db["webhook_attempts"]
        self.endpoints = db["webhook_endpoints"]
        self._after = ""  # the endpoint the last claim looked at (the next one starts after it)

    async def add(
        self,
        workspace_id: str,
        endpoint_id: str,
        generation: int,
        events: Sequence[StoredEvent],
        now: dt.datetime,
    ) -> int:
        docs = [
            {
                "_id": delivery_id(endpoint_id, event.id, generation),
                "workspaceId": workspace_id,
                "endpointId": endpoint_id,
                "eventId": event.id,
                "eventType": event.type,
                "generation": generation,
                "event": event.text,
                "state": PENDING,
                "attempts": 0,
                "nextAttemptAt": now,
                "createdAt": now,
                "updatedAt": now,
            }
            for event in events
        ]
        if not docs:
            return 0
        return await self._insert(docs)

    async def _insert(self, docs: list[dict]) -> int:
        try:
            result = await self.col.insert_many(docs, ordered=False)
        except BulkWriteError as exc:  # those inserted before (a fan-out that died): kept
            if any(e.get("code") != DUPLICATE_KEY for e in exc.details.get("writeErrors", [])):
                raise
            return int(exc.details.get("nInserted", 0))
        return len(result.inserted_ids)

    async def claim(
        self,
        now: dt.datetime,
        lease: dt.timedelta,
        limit: int,
        per_endpoint: int,
        finished: Sequence[tuple[Claim, Attempt]] = (),
        *,
        owner: str | None = None,
        ahead: int = 0,
    ) -> list[Claim]:
        """Endpoint by endpoint, round the endpoints with pending deliveries from where the
        last claim stopped (at most SCAN of them): each due one gets a claim per free slot, its
        earliest due deliveries first. Every claim holds one of the endpoint's `per_endpoint`
        slots, so nothing is taken `ahead` here."""
        await self.finish(finished)  # first: the slots they held are free for this claim
        token, until = lease_token(owner, new_id()), now + lease
        claims: list[Claim] = []
        first: str | None = None
        for _ in range(SCAN):
            if len(claims) >= limit:
                break
            found = await self._next_pending(self._after)
            if found is None and self._after:  # the last endpoint: round to the first
                self._after = ""
                found = await self._next_pending("")
            if found is None or found["endpointId"] == first:
                break  # nothing pending, or every endpoint looked at once
            endpoint_id = self._after = found["endpointId"]
            first = first or endpoint_id
            if found["nextAttemptAt"] > now:
                continue  # its earliest is not due yet (in flight, or a retry later)
            endpoint = await self.endpoints.find_one({"_id": endpoint_id}, ENDPOINT_FIELDS)
            if endpoint is None or endpoint["status"] != ENABLED:
                # Its endpoint is gone or disabled: nothing will be sent.
                await self.col.update_many(
                    {"state": PENDING, "endpointId": endpoint_id, "nextAttemptAt": {"$lte": now}},
                    {"$set": {"state": FAILED, "nextAttemptAt": None, "updatedAt": now}},
                )
                continue
            claims += await self._claim_endpoint(
                endpoint, per_endpoint, now, token, until, limit - len(claims)
            )
        return claims

    async def _next_pending(self, after: str) -> dict | None:
        """The earliest pending delivery of the first endpoint after `after` that has one: one
        seek on the (state, endpointId, nextAttemptAt) index, never through a backlog."""
        return await self.col.find_one(
            {"state": PENDING, "endpointId": {"$gt": after}},
            {"_id": 0, "endpointId": 1, "nextAttemptAt": 1},
            sort=[("state", 1), ("endpointId", 1), ("nextAttemptAt", 1)],
        )

    async def _claim_endpoint(
        self,
        endpoint: dict,
        per_endpoint: int,
        now: dt.datetime,
        token: str,
        until: dt.datetime,
        limit: int,
    ) -> list[Claim]:
        """Up to `limit` of the endpoint's due deliveries, earliest first, one per free slot:
        read in one range of its keys of the due index, then each taken by a conditional
        update on its `_id` (a delivery another process took meanwhile gives its slot back)."""
        workspace_id, endpoint_id = endpoint["workspaceId"], endpoint["_id"]
        slots = endpoint.get("slots") or {}
        free = sum(1 for i in range(per_endpoint) if (slots.get(f"s{i}") or now) <= now)
        if free <= 0:
            return []
        due = (
            await self.col.find(
                {
                    "state": PENDING,
                    "endpointId": endpoint_id,
                    "nextAttemptAt": {"$lte": now},
                    "workspaceId": workspace_id,
                },
                {"_id": 1, "nextAttemptAt": 1},
            )
            .sort([("state", 1), ("endpointId", 1), ("nextAttemptAt", 1)])
            .limit(min(free, limit))
            .to_list()
        )
        claims: list[Claim] = []
        for doc in due:
            slot = await self._take_slot(endpoint, workspace_id, per_endpoint, now, until)
            if slot is None:
                break
            taken = await self.col.find_one_and_update(
                {"_id": doc["_id"], "state": PENDING, "nextAttemptAt": doc["nextAttemptAt"]},
                {
                    "$set": {
                        "leaseToken": token,
                        "leaseUntil": until,
                        "nextAttemptAt": until,
                        "updatedAt": now,
                    },
                    "$inc": {"attempts": 1},
                },
            )
            if taken is None:  # claimed by another process meanwhile
                await self._free_slot(workspace_id, endpoint_id, slot, until)
                endpoint["slots"].pop(slot, None)
                continue
            claims.append(
                Claim(
                    taken["_id"],
                    workspace_id,
                    endpoint_id,
                    taken["eventId"],
                    taken["eventType"],
                    taken["event"],
                    taken["attempts"] + 1,
                    endpoint["url"],
                    secrets_at(endpoint["secrets"], now),
                    endpoint.get("failingSince"),
                    token,
                    until,
                    slot,
                )
            )
        return claims

    async def _take_slot(
        self,
        endpoint: dict,
        workspace_id: str,
        per_endpoint: int,
        now: dt.datetime,
        until: dt.datetime,
    ) -> str | None:
        """Take a free slot of `endpoint` (a compare-and-set on it; the document read is
        refreshed when another process got there first); its name, or None when all are taken."""
        for _ in range(per_endpoint + 1):
            slots = endpoint["slots"] = endpoint.get("slots") or {}
            free = _free_slot(slots, per_endpoint, now)
            if free is None:
                return None
            name, held = free
            condition = {"$exists": False} if held is None else held
            result = await self.endpoints.update_one(
                {"_id": endpoint["_id"], "workspaceId": workspace_id, f"slots.{name}": condition},
                {"$set": {f"slots.{name}": until}},
            )
            if result.modified_count:
                slots[name] = until
                return name
            fresh = await self.endpoints.find_one({"_id": endpoint["_id"]}, {"slots": 1})
            endpoint["slots"] = (fresh or {}).get("slots") or {}
        return None

    async def _free_slot(
        self, workspace_id: str, endpoint_id: str, slot: str, until: dt.datetime
    ) -> None:
        await self.endpoints.update_one(
            {"_id": endpoint_id, "workspaceId": workspace_id, f"slots.{slot}": until},
            {"$unset": {f"slots.{slot}": ""}},
        )

    async def release(self, claims: Sequence[Claim], now: dt.datetime) -> None:
        if not claims:
            return
        await self.col.bulk_write(
            [
                UpdateOne(
                    {"_id": claim.delivery_id, "leaseToken": claim.token, "state": PENDING},
                    {
                        "$set": {"nextAttemptAt": now, "updatedAt": now},
                        "$unset": {"leaseToken": "", "leaseUntil": ""},
                        "$inc": {"attempts": -1},
                    },
                )
                for claim in claims
            ],
            ordered=False,
        )
        for claim in claims:
            if claim.slot is not None:
                await self._free_slot(
                    claim.workspace_id, claim.endpoint_id, claim.slot, claim.until
                )

    async def finish(self, results: Sequence[tuple[Claim, Attempt]]) -> None:
        if not results:
            return
        attempts, updates, endpoints = [], [], {}
        slots: list[UpdateOne] = []
        for claim, attempt in results:
            if attempt.delivered:
                state = DELIVERED
            else:
                state = PENDING if attempt.next_attempt_at is not None else FAILED
            attempts.append(
                {
                    "_id": id_at(attempt.at),
                    "workspaceId": claim.workspace_id,
                    "endpointId": claim.endpoint_id,
                    "deliveryId": claim.delivery_id,
                    "eventId": claim.event_id,
                    "eventType": claim.event_type,
                    "attempt": claim.attempt,
                    "at": attempt.at,
                    "statusCode": attempt.status_code,
                    "durationMs": attempt.duration_ms,
                    "error": attempt.error,
                    "nextAttemptAt": attempt.next_attempt_at,
                }
            )
            # Only while the lease holds: an attempt that outlived it was taken over.
            updates.append(
                UpdateOne(
                    {"_id": claim.delivery_id, "leaseToken": claim.token, "state": PENDING},
                    {
                        "$set": {
                            "state": state,
                            "nextAttemptAt": attempt.next_attempt_at,
                            "updatedAt": attempt.at,
                        },
                        "$unset": {"leaseToken": "", "leaseUntil": ""},
                    },
                )
            )
            if claim.slot is not None:
                slots.append(
                    UpdateOne(
                        {
                            "_id": claim.endpoint_id,
                            "workspaceId": claim.workspace_id,
                            f"slots.{claim.slot}": claim.until,
                        },
                        {"$unset": {f"slots.{claim.slot}": ""}},
                    )
                )
            endpoints[(claim.endpoint_id, claim.workspace_id)] = (attempt.delivered, attempt.at)
        await self.attempts.insert_many(attempts, ordered=False)
        await self.col.bulk_write(updates, ordered=False)
        for (endpoint_id, workspace_id), (delivered, at) in endpoints.items():
            held = {"_id": endpoint_id, "workspaceId": workspace_id}
            if delivered:
                slots.append(
                    UpdateOne(
                        {**held, "failingSince": {"$ne": None}}, {"$set": {"failingSince": None}}
                    )
                )
            else:
                slots.append(
                    UpdateOne({**held, "failingSince": None}, {"$set": {"failingSince": at}})
                )
        # One at a time per endpoint document: in order, so no update waits on another.
        await self.endpoints.bulk_write(slots, ordered=True)

    async def page(
        self, workspace_id: str, endpoint_id: str, after: Position | None, page_size: int
    ) -> AttemptPage:
        query: dict = {"workspaceId": workspace_id, "endpointId": endpoint_id}
        if after is not None:
            query = {
                "$and": [
                    query,
                    {
                        "$or": [
                            {"at": {"$lt": after.value}},
                            {"at": after.value, "_id": {"$lt": after.id}},
                        ]
                    },
                ]
            }
        docs = (
            await self.attempts.find(query)
            .sort([("at", -1), ("_id", -1)])
            .limit(page_size + 1)
            .to_list()
        )
        return attempt_page(docs, page_size)

    async def backlog(self) -> int:
        """Counted on the attempt_due index (state first)."""
        return await self.col.count_documents({"state": PENDING})

    async def delete_expired(
        self, before: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Attempts by `_id` (ids sort as their instants), finished deliveries by the
        (state, updatedAt) index."""
        deleted = 0
        for _ in range(max_batches):
            found = 0
            cursor = (
                self.attempts.find({"_id": {"$lt": first_id_at(before)}}, {"_id": 1})
                .sort("_id", 1)
                .limit(batch)
            )
            if ids := [doc["_id"] async for doc in cursor]:
                found += (await self.attempts.delete_many({"_id": {"$in": ids}})).deleted_count
            for state in (DELIVERED, FAILED):
                cursor = self.col.find(
                    {"state": state, "updatedAt": {"$lt": before}}, {"_id": 1}
                ).limit(batch)
                if ids := [doc["_id"] async for doc in cursor]:
                    found += (await self.col.delete_many({"_id": {"$in": ids}})).deleted_count
            deleted += found
            if found < batch:
                break
        return deleted
