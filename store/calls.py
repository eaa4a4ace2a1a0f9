"""Calls: the paginated, filtered call log and the recording reference of a call.

A call document is written once the call has ended, with `createdAt` equal to `startedAt`
(the moment the call began), so the `createdFrom`/`createdTo` filters of GET /calls and the
day a call counts on in the dialer metrics are one and the same instant. `updatedAt` is when
the record was last written, which is what incremental syncs (`updatedSince`) follow.
The provider's recording reference (`recordingRef`) is stored but never part of a record.
"""

from __future__ import annotations

import datetime as dt

from store.activities import Activities, call_activity, to_ms
from store.clock import new_id, utcnow
from store.paging import Page, page_query

DIRECTIONS = ("outbound", "inbound")
DISPOSITIONS = ("connected", "no_answer", "voicemail", "busy", "failed", "wrong_number")
NEWEST_FIRST = [("createdAt", -1), ("_id", -1)]
RECORD_FIELDS = ("direction", "disposition", "fromNumber", "toNumber", "userId", "prospectId",
                 "listId", "startedAt", "answeredAt", "endedAt", "durationSeconds",
                 "hasRecording", "recordingDurationSeconds", "meetingBooked", "notes",
                 "createdAt", "updatedAt")
CALL_FIELDS = dict.fromkeys(("_id", *RECORD_FIELDS), 1)
INSERT_BATCH = 5000


def _record(doc: dict) -> dict:
    return {"id": doc["_id"], **{field: doc[field] for field in RECORD_FIELDS}}


def call_document(workspace_id: str, *, user_id: str, prospect_id: str, direction: str,
                  disposition: str, from_number: str, to_number: str, started_at: dt.datetime,
                  ended_at: dt.datetime, answered_at: dt.datetime | None = None,
                  list_id: str | None = None, meeting_booked: bool = False,
                  notes: str | None = None, recording_ref: str | None = None,
                  recording_duration_seconds: int | None = None,
                  updated_at: dt.datetime | None = None, call_id: str | None = None) -> dict:
    """The stored form of a finished call. Talk time (durationSeconds) runs from answeredAt to
    endedAt, 0 for a call that was never answered."""
    if direction not in DIRECTIONS or disposition not in DISPOSITIONS:
        raise ValueError(f"unknown direction {direction!r} or disposition {disposition!r}")
    started_at, ended_at = to_ms(started_at), to_ms(ended_at)
    answered_at = answered_at and to_ms(answered_at)
    if not started_at <= (answered_at or started_at) <= ended_at:
        raise ValueError("a call must start, be answered and end in that order")
    talk = int((ended_at - answered_at).total_seconds()) if answered_at else 0
    return {
        "_id": call_id or new_id(), "workspaceId": workspace_id, "direction": direction,
        "disposition": disposition, "fromNumber": from_number, "toNumber": to_number,
        "userId": user_id, "prospectId": prospect_id, "listId": list_id,
        "startedAt": started_at, "answeredAt": answered_at, "endedAt": ended_at,
        "durationSeconds": talk, "hasRecording": recording_ref is not None,
        "recordingDurationSeconds": recording_duration_seconds if recording_ref else None,
        "recordingRef": recording_ref, "meetingBooked": meeting_booked, "notes": notes,
        "createdAt": started_at, "updatedAt": to_ms(updated_at or utcnow()),
    }


def call_filters(workspace_id: str, *, user_id=None, prospect_id=None, list_id=None,
                 direction=None, disposition=None, created_from=None, created_to=None,
                 updated_since=None) -> dict:
    """The query of GET /calls: equality filters, createdAt in [from, to), updatedAt >= since."""
    query: dict = {"workspaceId": workspace_id}
    for field, value in (("userId", user_id), ("prospectId", prospect_id), ("listId", list_id),
                         ("direction", direction), ("disposition", disposition)):
        if value is not None:
            query[field] = value
    created = {}
    if created_from is not None:
        created["$gte"] = created_from
    if created_to is not None:
        created["$lt"] = created_to
    if created:
        query["createdAt"] = created
    if updated_since is not None:
        query["updatedAt"] = {"$gte": updated_since}
    return query


class Calls:
    def __init__(self, db):
        self.col = db["calls"]
        self.activities = Activities(db)

    async def create(self, workspace_id: str, **fields) -> dict:
        """Record one finished call (`call_document` arguments); returns its API record."""
        doc = call_document(workspace_id, **fields)
        await self.insert_documents(workspace_id, [doc])
        return _record(doc)

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt call documents in bounded batches, each with its `call` activity on
        the prospect's timeline."""
        if any(doc["workspaceId"] != workspace_id for doc in documents):
            raise ValueError("every document must belong to the given workspace")
        for start in range(0, len(documents), INSERT_BATCH):
            batch = documents[start:start + INSERT_BATCH]
            await self.col.insert_many(batch, ordered=False)
            await self.activities.insert_documents(workspace_id,
                                                   [call_activity(doc) for doc in batch])

    async def page(self, workspace_id: str, page: int, page_size: int, **filters) -> Page:
        """One page of calls, newest first (createdAt, then id); `filters` as `call_filters`."""
        return await page_query(self.col, call_filters(workspace_id, **filters), NEWEST_FIRST,
                                page, page_size, CALL_FIELDS, _record)

    async def recording_ref(self, workspace_id: str, call_id: str) -> str | None:
        """The provider's reference of the call's recording; None when the call is not in this
        workspace or has no recording."""
        doc = await self.col.find_one(
            {"_id": call_id, "workspaceId": workspace_id, "hasRecording": True},
            {"recordingRef": 1})
        return doc and doc.get("recordingRef")
