"""Prospect activities, backend-neutral: the stored form of an activity and the entries derived
from calls and list memberships. A timeline is read newest first (occurredAt, then id), as a
stream of bounded batches, never as one list.

An activity also keeps when it was stored (`storedAt`), distinct from when it happened
(`occurredAt`, which may lie in the past): the activities export reads them in the order they
were stored, and its `updatedSince` filters on that moment. Rows written before the field
existed have it set to their `occurredAt` when the store opens them.
"""

from __future__ import annotations

import datetime as dt
import uuid

from store.clock import name_id, new_id, utcnow

TYPES = (
    "call",
    "note",
    "email",
    "list_added",
    "list_removed",
    "meeting_booked",
    "status_change",
)
TIMELINE_ORDER = [("occurredAt", -1), ("_id", -1)]
FIELDS = {
    "_id": 1,
    "type": 1,
    "occurredAt": 1,
    "userId": 1,
    "callId": 1,
    "summary": 1,
    "details": 1,
}
EXPORT_FIELDS = {**FIELDS, "prospectId": 1, "storedAt": 1}
INSERT_BATCH = 5000
# Ids of derived activities (a call's entry, a list membership) are derived from what they
# record, so writing them again is idempotent.
DERIVED_IDS = uuid.UUID("6f1c0a3e-2b7d-4c59-9e8a-3d5b7f2a1c90")
DISPOSITION_WORDS = {
    "connected": "connected",
    "no_answer": "no answer",
    "voicemail": "voicemail",
    "busy": "busy",
    "failed": "failed",
    "wrong_number": "wrong number",
}


def to_ms(value: dt.datetime) -> dt.datetime:
    """A naive UTC datetime truncated to BSON's millisecond precision."""
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def derived_id(*parts: str) -> str:
    """uuid5(DERIVED_IDS, "/".join(parts)) as text."""
    return name_id(DERIVED_IDS, "/".join(parts))


def activity_document(
    workspace_id: str,
    prospect_id: str,
    type: str,
    occurred_at: dt.datetime,
    summary: str,
    details: dict | None = None,
    *,
    user_id: str | None = None,
    call_id: str | None = None,
    activity_id: str | None = None,
    stored_at: dt.datetime | None = None,
) -> dict:
    """The stored form of one activity; `storedAt` is now unless given."""
    if type not in TYPES:
        raise ValueError(f"unknown activity type {type!r}")
    return {
        "_id": activity_id or new_id(),
        "workspaceId": workspace_id,
        "prospectId": prospect_id,
        "type": type,
        "occurredAt": to_ms(occurred_at),
        "userId": user_id,
        "callId": call_id,
        "summary": summary,
        "details": details or {},
        "storedAt": to_ms(stored_at) if stored_at else utcnow(),
    }


def _duration(seconds: int) -> str:
    return f"{seconds // 60}m {seconds % 60:02d}s"


def call_activity(call: dict) -> dict:
    """The `call` entry a stored call document puts on its prospect's timeline."""
    words = f"{call['direction'].capitalize()} call: {DISPOSITION_WORDS[call['disposition']]}"
    if call["durationSeconds"]:
        words += f" ({_duration(call['durationSeconds'])})"
    return activity_document(
        call["workspaceId"],
        call["prospectId"],
        "call",
        call["startedAt"],
        words,
        {
            "direction": call["direction"],
            "disposition": call["disposition"],
            "durationSeconds": call["durationSeconds"],
        },
        user_id=call["userId"],
        call_id=call["_id"],
        activity_id=derived_id(call["workspaceId"], "call", call["_id"]),
    )


def list_added_activity(
    workspace_id: str, prospect_id: str, list_id: str, list_name: str | None, at: dt.datetime
) -> dict:
    """A prospect joined a dialer list; one per prospect and list (its id says which)."""
    summary = f"Added to list {list_name}" if list_name else "Added to a dialer list"
    return activity_document(
        workspace_id,
        prospect_id,
        "list_added",
        at,
        summary,
        {"listId": list_id, "listName": list_name},
        activity_id=derived_id(workspace_id, "list_added", prospect_id, list_id),
    )


def list_removed_activity(
    workspace_id: str,
    prospect_id: str,
    list_id: str,
    list_name: str | None,
    at: dt.datetime,
    removal: str,
) -> dict:
    """A prospect left a dialer list; one per prospect and removal (`removal`, the id of the
    request's unit of work, is in its id: the same removal written again is idempotent)."""
    summary = f"Removed from list {list_name}" if list_name else "Removed from a dialer list"
    return activity_document(
        workspace_id,
        prospect_id,
        "list_removed",
        at,
        summary,
        {"listId": list_id, "listName": list_name},
        activity_id=derived_id(workspace_id, "list_removed", prospect_id, list_id, removal),
    )


def record(doc: dict) -> dict:
    return {
        "id": doc["_id"],
        "type": doc["type"],
        "occurredAt": doc["occurredAt"],
        # Absent and null are the same here: some servers leave a null out of a $setOnInsert
        # (FerretDB 1.24), as record_list_added writes it.
        "userId": doc.get("userId"),
        "callId": doc.get("callId"),
        "summary": doc["summary"],
        "details": doc["details"],
    }


def export_record(doc: dict) -> dict:
    """An activity as the activities export shows it: the timeline's record with its
    `prospectId` and `storedAt` (a row stored before the field existed: its `occurredAt`)."""
    return {
        "id": doc["_id"],
        "prospectId": doc["prospectId"],
        "type": doc["type"],
        "occurredAt": doc["occurredAt"],
        "storedAt": doc.get("storedAt") or doc["occurredAt"],
        "userId": doc.get("userId"),
        "callId": doc.get("callId"),
        "summary": doc["summary"],
        "details": doc["details"],
    }


def event_record(doc: dict) -> dict:
    """An activity as its `activity.created` event carries it: its record and its prospect."""
    return {**record(doc), "prospectId": doc["prospectId"]}


def check_scope(workspace_id: str, documents: list[dict]) -> None:
    if any(doc["workspaceId"] != workspace_id for doc in documents):
        raise ValueError("every document must belong to the given workspace")
