"""An erasure's work on MongoDB (store/erasures.py has the rules), as a sequence of steps that
can each be done again: a worker killed between two of them leaves the rest to the next holder
of the request, which repeats the prospect from its start (each step finds its work done or
does it again with the same outcome).

1. The recording references and call ids of the person's calls are added to the request first
   (a call rewritten before a crash keeps no reference, so they are saved before).
2. The retained events that carry the person are rewritten (a prospect's and its activities'
   to `{"id", "erased": true}`, a call's to its erased record), and the webhook deliveries
   made of them.
3. The calls are rewritten (store.calls.erased_changes), with their `call.updated` events.
4. Stored Idempotency-Key answers naming the prospect or its calls become the `erased` problem.
5. The prospect is deleted as DELETE /prospects/{id} deletes it (store/mongo/prospect_changes.py).
6. The prospect is marked done in the request, with the counts.
"""

from __future__ import annotations

import re

from pymongo import UpdateOne
from pymongo.asynchronous.database import AsyncDatabase

from store.calls import erased_changes
from store.calls import record as call_record
from store.erasures import (
    ACTIVITY_EVENTS,
    CALL_EVENTS,
    ERASED_ANSWER,
    LEASE,
    PERSON_EVENTS,
    PROBLEM_TYPE,
    ErasureClaim,
    erased,
)
from store.events import encode, event_json
from store.mongo.events import EventWriter
from store.mongo.prospect_changes import ProspectChanges

CHUNK = 500


class Eraser:
    def __init__(self, db: AsyncDatabase, events: EventWriter, prospects: ProspectChanges):
        self.db = db
        self.col = db["erasures"]
        self.events = events
        self.prospects = prospects

    async def _rewrite(self, workspace_id: str, data: dict[str, str], types: tuple) -> list:
        """Set the data of the events of `types` about each record of `data` (record id: its
        erased data as JSON text); the ids of the events rewritten."""
        rewritten: list[str] = []
        ids = list(data)
        for start in range(0, len(ids), CHUNK):
            part = ids[start : start + CHUNK]
            found = self.db["events"].find(
                {"workspaceId": workspace_id, "resourceId": {"$in": part}, "type": {"$in": types}},
                {"resourceId": 1, "type": 1, "occurredAt": 1},
            )
            events = [doc async for doc in found]
            if not events:
                continue
            await self.db["events"].bulk_write(
                [
                    UpdateOne(
                        {"_id": e["_id"], "workspaceId": workspace_id},
                        {"$set": {"data": data[e["resourceId"]]}},
                    )
                    for e in events
                ],
                ordered=False,
            )
            await self.db["webhook_deliveries"].bulk_write(
                [
                    UpdateOne(
                        {"workspaceId": workspace_id, "eventId": e["_id"]},
                        {
                            "$set": {
                                "event": event_json(
                                    e["_id"], e["type"], e["occurredAt"], data[e["resourceId"]]
                                )
                            }
                        },
                    )
                    for e in events
                ],
                ordered=False,
            )
            rewritten += [e["_id"] for e in events]
        return rewritten

    async def erase(self, claim: ErasureClaim, prospect_id: str) -> list[str] | None:
        ws = claim.workspace_id
        held = {"_id": claim.id, "workspaceId": ws, "leaseToken": claim.token}
        doc = await self.col.find_one(held, {"done": 1})
        if doc is None:
            return None
        if prospect_id in doc["done"]:
            return []
        calls = [
            c async for c in self.db["calls"].find({"workspaceId": ws, "prospectId": prospect_id})
        ]
        refs = [c["recordingRef"] for c in calls if c.get("recordingRef")]
        call_ids = [c["_id"] for c in calls]
        saved = await self.col.update_one(
            held,
            {"$addToSet": {"recordings": {"$each": refs}, "callIds": {"$each": call_ids}}},
        )
        if not saved.matched_count:
            return None
        activities = [
            a["_id"]
            async for a in self.db["activities"].find(
                {"workspaceId": ws, "prospectId": prospect_id}, {"_id": 1}
            )
        ]
        now = self.events.now()
        changed = {c["_id"]: erased_changes(c, now) for c in calls}
        records = {c["_id"]: encode(call_record({**c, **changed[c["_id"]]})) for c in calls}
        rewritten = await self._rewrite(
            ws, {prospect_id: encode(erased(prospect_id))}, PERSON_EVENTS
        )
        rewritten += await self._rewrite(
            ws, {a: encode(erased(a)) for a in activities}, ACTIVITY_EVENTS
        )
        rewritten += await self._rewrite(ws, records, CALL_EVENTS)
        if calls:
            pending = self.events.begin()
            for call in calls:
                await self.db["calls"].update_one(
                    {"_id": call["_id"], "workspaceId": ws},
                    pending.update({"$set": changed[call["_id"]]}),
                )
            await self.events.publish(ws, pending, {"calls": call_ids})
        for named in [prospect_id, *call_ids]:  # stored answers that named the person
            await self.db["idempotency"].update_many(
                {
                    "workspaceId": ws,
                    "status": {"$nin": [None, 410]},
                    "body": {"$regex": re.escape(named)},
                },
                {
                    "$set": {
                        "status": 410,
                        "body": ERASED_ANSWER,
                        "contentType": PROBLEM_TYPE,
                        "location": None,
                    }
                },
            )
        deleted = await self.prospects.delete(ws, prospect_id)
        counts = {
            "prospects": int(bool(deleted)),
            "activities": len(activities),
            "calls": len(calls),
            "events": len(rewritten),
        }
        done = await self.col.update_one(
            {**held, "done": {"$ne": prospect_id}},
            {
                "$push": {"done": prospect_id},
                "$set": {"leaseUntil": self.events.now() + LEASE},  # each step renews it
                "$inc": {f"counts.{name}": value for name, value in counts.items()},
            },
        )
        return refs if done.matched_count else None
