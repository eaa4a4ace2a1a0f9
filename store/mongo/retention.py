"""Recording retention on MongoDB (store/retention.py): claiming the calls whose recordings are
due, removing a reference the provider confirmed gone (with its `call.updated` event), and
postponing a call after a provider failure.

Candidates are read by `ws_recording_due` (workspaceId, hasRecording, endedAt), oldest end
first; a claim is one conditional update of them all (a call is claimed only while it is due:
of two processes claiming at once, each call goes to one), and the calls that carry the claim's
token afterwards are the claimer's.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from pymongo.asynchronous.collection import AsyncCollection

from store.calls import CALL_FIELDS
from store.calls import record as call_record
from store.clock import new_id
from store.retention import DueRecording

if TYPE_CHECKING:
    from store.mongo.events import EventWriter

CLAIM_FIELDS = ("recordingRetryAt", "recordingClaim", "recordingAttempts")


def _due(workspace_id: str, ended_before: dt.datetime, now: dt.datetime) -> dict:
    return {
        "workspaceId": workspace_id,
        "hasRecording": True,
        "endedAt": {"$lt": ended_before},
        "$or": [{"recordingRetryAt": None}, {"recordingRetryAt": {"$lte": now}}],
    }


async def claim_due(
    col: AsyncCollection,
    workspace_id: str,
    ended_before: dt.datetime,
    now: dt.datetime,
    lease: dt.timedelta,
    limit: int,
) -> list[DueRecording]:
    """Claim up to `limit` due calls of the workspace until `now + lease`."""
    due = _due(workspace_id, ended_before, now)
    cursor = col.find(due, {"_id": 1}).sort([("endedAt", 1)]).limit(limit)
    ids = [doc["_id"] async for doc in cursor]
    if not ids:
        return []
    token = new_id()
    await col.update_many(
        {**due, "_id": {"$in": ids}},
        {"$set": {"recordingRetryAt": now + lease, "recordingClaim": token}},
    )
    claimed = col.find(
        {"_id": {"$in": ids}, "workspaceId": workspace_id, "recordingClaim": token},
        {"recordingRef": 1, "recordingAttempts": 1, "endedAt": 1},
    ).sort([("endedAt", 1)])
    return [
        DueRecording(doc["_id"], doc["recordingRef"], token, doc.get("recordingAttempts") or 0)
        async for doc in claimed
    ]


async def forget(
    col: AsyncCollection, events: EventWriter, workspace_id: str, due: DueRecording
) -> dict | None:
    """Remove the call's recording reference, if the call still holds `due.ref`: hasRecording
    false, updatedAt moved (never backwards), `call.updated` (the update carries the marker)."""
    holds = {
        "_id": due.call_id,
        "workspaceId": workspace_id,
        "hasRecording": True,
        "recordingRef": due.ref,
    }
    doc = await col.find_one(holds, CALL_FIELDS)
    if doc is None:
        return None
    pending = events.begin()
    moved = {
        "hasRecording": False,
        "recordingRef": None,
        "updatedAt": max(events.now(), doc["updatedAt"]),
    }
    unset = dict.fromkeys(CLAIM_FIELDS, "")
    result = await col.update_one(
        {**holds, "updatedAt": doc["updatedAt"]},
        pending.update({"$set": moved, "$unset": unset}),
    )
    if not result.matched_count:
        return None  # changed meanwhile: the next round looks again
    await events.publish(workspace_id, pending, {"calls": [due.call_id]})
    return call_record({**doc, **moved})


async def postpone(
    col: AsyncCollection, workspace_id: str, due: DueRecording, until: dt.datetime
) -> None:
    """After a provider failure: the call is due again at `until`, one more failure counted
    (only while `due`'s claim is the call's)."""
    await col.update_one(
        {"_id": due.call_id, "workspaceId": workspace_id, "recordingClaim": due.token},
        {
            "$set": {"recordingRetryAt": until, "recordingAttempts": due.attempts + 1},
            "$unset": {"recordingClaim": ""},
        },
    )
