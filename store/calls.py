"""Calls, backend-neutral: the stored form of a finished call and its API record.

A call document is written once the call has ended, with `createdAt` equal to `startedAt`
(the moment the call began), so the `createdFrom`/`createdTo` filters of GET /calls and the
day a call counts on in the dialer metrics are one and the same instant. `updatedAt` is when
the record was last written, which is what incremental syncs (`updatedSince`) follow.
The provider's recording reference (`recordingRef`) is stored but never part of a record.
`toNumberSuppressed` says whether the toNumber was on the workspace's do-not-call list when the
call was recorded (set by the recording write, `suppressed_numbers`; never changed after); a
call stored before the field existed reads as false.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Set as AbstractSet
from typing import NotRequired, TypedDict

from store.activities import to_ms
from store.clock import new_id, utcnow

DIRECTIONS = ("outbound", "inbound")
DISPOSITIONS = ("connected", "no_answer", "voicemail", "busy", "failed", "wrong_number")
RECORD_FIELDS = (
    "direction",
    "disposition",
    "fromNumber",
    "toNumber",
    "toNumberSuppressed",
    "userId",
    "prospectId",
    "listId",
    "startedAt",
    "answeredAt",
    "endedAt",
    "durationSeconds",
    "hasRecording",
    "recordingDurationSeconds",
    "meetingBooked",
    "notes",
    "createdAt",
    "updatedAt",
)
ERASED_AT = "erasedAt"  # only on a call an erasure rewrote (store/erasures.py)
CALL_FIELDS = dict.fromkeys(("_id", *RECORD_FIELDS, ERASED_AT), 1)
# The number that was the person's: the called one outbound, the calling one inbound.
PERSON_NUMBER = {"outbound": "toNumber", "inbound": "fromNumber"}
INSERT_BATCH = 5000


class CallFields(TypedDict):
    """The arguments of `call_document` after the workspace id: a call given as is (seeding,
    tests), typed once for the store contract (Calls.create) and both backends."""

    user_id: str
    prospect_id: str
    direction: str
    disposition: str
    from_number: str
    to_number: str
    started_at: dt.datetime
    ended_at: dt.datetime
    answered_at: NotRequired[dt.datetime | None]
    list_id: NotRequired[str | None]
    meeting_booked: NotRequired[bool]
    notes: NotRequired[str | None]
    recording_ref: NotRequired[str | None]
    recording_duration_seconds: NotRequired[int | None]
    updated_at: NotRequired[dt.datetime | None]
    call_id: NotRequired[str | None]
    to_number_suppressed: NotRequired[bool]


def record(doc: dict) -> dict:
    shown = {
        "id": doc["_id"],
        **{field: doc[field] for field in RECORD_FIELDS if field != "toNumberSuppressed"},
        "toNumberSuppressed": bool(doc.get("toNumberSuppressed")),
    }
    if doc.get(ERASED_AT) is not None:
        shown[ERASED_AT] = doc[ERASED_AT]
    return shown


def erased_changes(doc: dict, now: dt.datetime) -> dict:
    """What an erasure sets on a call of the person: no prospect, no number of theirs, no
    notes, no recording (its reference is deleted at the provider first), `erasedAt`; what the
    dialer metrics count (times, direction, disposition, durations, user, list) is kept."""
    return {
        "prospectId": None,
        PERSON_NUMBER[doc["direction"]]: None,
        "notes": None,
        "hasRecording": False,
        "recordingDurationSeconds": None,
        "recordingRef": None,
        ERASED_AT: now,
        "updatedAt": max(now, doc["updatedAt"]),
    }


def suppressed_numbers(docs: list[dict], listed: AbstractSet[str]) -> None:
    """Mark new call documents whose toNumber's key (store.dnc.phone_key) is among `listed`,
    the workspace's do-not-call keys read in the recording's write."""
    for doc in docs:
        doc["toNumberSuppressed"] = bool(doc["toNumber"]) and "p:" + doc["toNumber"] in listed


def number_keys(docs: list[dict]) -> set[str]:
    """The do-not-call keys of new call documents' toNumbers (what `suppressed_numbers` reads)."""
    return {"p:" + doc["toNumber"] for doc in docs if doc["toNumber"]}


def call_document(
    workspace_id: str,
    *,
    user_id: str,
    prospect_id: str,
    direction: str,
    disposition: str,
    from_number: str,
    to_number: str,
    started_at: dt.datetime,
    ended_at: dt.datetime,
    answered_at: dt.datetime | None = None,
    list_id: str | None = None,
    meeting_booked: bool = False,
    notes: str | None = None,
    recording_ref: str | None = None,
    recording_duration_seconds: int | None = None,
    updated_at: dt.datetime | None = None,
    call_id: str | None = None,
    to_number_suppressed: bool = False,
) -> dict:
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
        "_id": call_id or new_id(),
        "workspaceId": workspace_id,
        "direction": direction,
        "disposition": disposition,
        "fromNumber": from_number,
        "toNumber": to_number,
        "toNumberSuppressed": to_number_suppressed,
        "userId": user_id,
        "prospectId": prospect_id,
        "listId": list_id,
        "startedAt": started_at,
        "answeredAt": answered_at,
        "endedAt": ended_at,
        "durationSeconds": talk,
        "hasRecording": recording_ref is not None,
        "recordingDurationSeconds": recording_duration_seconds if recording_ref else None,
        "recordingRef": recording_ref,
        "meetingBooked": meeting_booked,
        "notes": notes,
        "createdAt": started_at,
        "updatedAt": to_ms(updated_at or utcnow()),
    }
