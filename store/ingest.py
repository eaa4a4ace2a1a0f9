"""The dialer's writes, backend-neutral: what recording a call, changing a call and logging an
activity hand the store (validated and normalised by handlers/ingest.py), the rules the
backends share (ids derived from provider SIDs, what "the same call" means, references that
must exist), and how a write refuses (`Refused`, writing nothing).

- A call with a `providerCallSid` gets the id uuid5(workspace, SID) on both backends, so that
  concurrent posts of one SID converge on one call by its unique id. Posting the SID again is
  "existing" when its content (`content_hash`: the creating body's fields, its prospect as
  resolved) is the same as the first post's, else refused with `call_exists`; later changes
  (PATCH) do not change what the first post's content was.
- `userId` must be a user of the workspace that is not deleted, `prospectId`, `listId` and an
  activity's `callId` records of the workspace: else `invalid_reference`, one answer for
  unknown, deleted and another workspace's.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Collection

from store.activities import activity_document, derived_id
from store.calls import call_document
from store.clock import new_id

CREATED, EXISTING = "created", "existing"


@dataclasses.dataclass
class NewCall:
    """One finished call to record: its prospect by id or by contact (a raw contact, matched
    with the contact upload's rules)."""

    user_id: str
    direction: str
    disposition: str
    from_number: str
    to_number: str
    started_at: dt.datetime
    ended_at: dt.datetime
    prospect_id: str | None = None
    contact: dict | None = None
    list_id: str | None = None
    answered_at: dt.datetime | None = None
    meeting_booked: bool = False
    notes: str | None = None
    sid: str | None = None  # the provider's call SID, lower case
    recording_ref: str | None = None
    recording_duration_seconds: int | None = None
    # An id the caller derives from the call's content (the import, for calls without a SID):
    # like a SID's, it makes recording the call again `existing`.
    call_id: str | None = None
    # The last content hash made, with the prospect it was made for (a call's hash is asked for
    # when it is compared and again when it is stored).
    _hashed: tuple[str, str] | None = dataclasses.field(default=None, compare=False, repr=False)

    def content_hash(self, prospect_id: str) -> str:
        """What makes two posts of one SID the same call: every field of the body, with the
        prospect as resolved. (Stored with the call and compared with later posts: its form
        must never change.)"""
        if self._hashed is not None and self._hashed[0] == prospect_id:
            return self._hashed[1]
        values = (
            self.user_id,
            self.direction,
            self.disposition,
            self.from_number,
            self.to_number,
            self.started_at,
            self.ended_at,
            prospect_id,
            self.list_id,
            self.answered_at,
            self.meeting_booked,
            self.notes,
            self.sid,
            self.recording_ref,
            self.recording_duration_seconds,
        )
        text = "\x1f".join(map(repr, values))
        digest = hashlib.sha256(text.encode()).hexdigest()[:32]
        self._hashed = (prospect_id, digest)
        return digest

    def document(self, workspace_id: str, call_id: str, prospect_id: str, now: dt.datetime) -> dict:
        """The stored call: its `updatedAt` is `now` (or its endedAt, up to a minute ahead)."""
        doc = call_document(
            workspace_id,
            user_id=self.user_id,
            prospect_id=prospect_id,
            direction=self.direction,
            disposition=self.disposition,
            from_number=self.from_number,
            to_number=self.to_number,
            started_at=self.started_at,
            answered_at=self.answered_at,
            ended_at=self.ended_at,
            list_id=self.list_id,
            meeting_booked=self.meeting_booked,
            notes=self.notes,
            recording_ref=self.recording_ref,
            recording_duration_seconds=self.recording_duration_seconds,
            updated_at=max(now, self.ended_at),
            call_id=call_id,
        )
        doc["contentHash"] = self.content_hash(prospect_id)
        return doc


def sid_call_id(workspace_id: str, sid: str) -> str:
    """The id of the call with provider SID `sid` in a workspace (the same in every process)."""
    return derived_id(workspace_id, "providerCallSid", sid)


def call_ids(workspace_id: str, calls: list[NewCall], marks: list[str] | None) -> list[str]:
    """The ids of calls to record: from the provider SID, else the caller's own id, else the
    Idempotency-Key's (`marks`), else new."""
    return [
        sid_call_id(workspace_id, call.sid)
        if call.sid
        else call.call_id or (marks[index] if marks else new_id())
        for index, call in enumerate(calls)
    ]


def converging(calls: list[NewCall], marks: list[str] | None) -> list[int]:
    """The calls whose ids converge (a SID, the caller's id, an Idempotency-Key's): an earlier
    record under the id is looked for."""
    return [i for i, call in enumerate(calls) if call.sid or call.call_id or marks]


@dataclasses.dataclass
class NewActivity:
    """One activity to log on a prospect's timeline (note, email, meeting_booked,
    status_change)."""

    prospect_id: str
    type: str
    occurred_at: dt.datetime
    details: dict
    user_id: str | None = None
    summary: str | None = None
    call_id: str | None = None

    def document(self, workspace_id: str, activity_id: str) -> dict:
        return activity_document(
            workspace_id,
            self.prospect_id,
            self.type,
            self.occurred_at,
            self.summary or derived_summary(self.type, self.details),
            self.details,
            user_id=self.user_id,
            call_id=self.call_id,
            activity_id=activity_id,
        )


SUMMARY_LENGTH = 200


def derived_summary(kind: str, details: dict) -> str:
    """The one line of an activity logged without a summary (the wording the timeline's own
    entries use)."""
    if kind == "note":
        line = details["text"].strip().splitlines()[0].strip()
        return line if len(line) <= SUMMARY_LENGTH else line[: SUMMARY_LENGTH - 1] + "…"
    if kind == "email":
        verb = "received" if details["direction"] == "inbound" else "sent"
        return f"Email {verb}: {details['subject']}"
    if kind == "meeting_booked":
        at = details.get("scheduledFor")
        return "Meeting booked for " + at.strftime("%b %d") if at else "Meeting booked"
    if kind == "status_change":
        return f"Status: {details['from'] or 'none'} → {details['to']}"
    raise ValueError(f"activities of type {kind!r} are not logged")


@dataclasses.dataclass(frozen=True)
class Refusal:
    """Why a write refuses one call or activity (`index` in a batch, None for a single one):
    `invalid_reference` (a field names no usable record) or `call_exists` (its SID is
    recorded with other content: `call_id`)."""

    code: str
    field: str
    detail: str
    index: int | None = None
    call_id: str | None = None

    def pointer(self) -> str:
        return ("#" if self.index is None else f"#/calls/{self.index}") + f"/{self.field}"


class Refused(Exception):
    """Raised by a write that refuses what it was given; nothing was written."""

    def __init__(self, refusal: Refusal):
        super().__init__(refusal.detail)
        self.refusal = refusal


REFERENCE_DETAILS = {
    "userId": "is not an active user of your workspace",
    "prospectId": "is not a prospect of your workspace",
    "listId": "is not a list of your workspace",
    "callId": "is not a call of your workspace",
}


def unknown(field: str, index: int | None = None) -> Refusal:
    return Refusal("invalid_reference", field, REFERENCE_DETAILS[field], index)


def exists(call_id: str, index: int | None = None) -> Refusal:
    return Refusal(
        "call_exists",
        "providerCallSid",
        "a call with this providerCallSid is recorded already, with other content",
        index,
        call_id,
    )


@dataclasses.dataclass(frozen=True)
class References:
    """The ids the calls of a write name that are usable records of the workspace."""

    users: Collection[str]
    prospects: Collection[str]
    lists: Collection[str]


def wanted(calls: list[NewCall]) -> tuple[set[str], set[str], set[str]]:
    """The user, prospect and list ids the calls name, to look up."""
    users = {c.user_id for c in calls}
    prospects = {c.prospect_id for c in calls if c.prospect_id}
    lists = {c.list_id for c in calls if c.list_id}
    return users, prospects, lists


def reference_refusals(
    calls: list[NewCall], found: References, batch: bool
) -> list[tuple[int, Refusal]]:
    """(index, refusal) of every call that names a record that is not usable."""
    refused = []
    for index, call in enumerate(calls):
        at = index if batch else None
        if call.user_id not in found.users:
            refused.append((index, unknown("userId", at)))
        elif call.prospect_id is not None and call.prospect_id not in found.prospects:
            refused.append((index, unknown("prospectId", at)))
        elif call.list_id is not None and call.list_id not in found.lists:
            refused.append((index, unknown("listId", at)))
    return refused


def activity_refusal(
    activity: NewActivity,
    prospects: Collection[str],
    users: Collection[str],
    calls: Collection[str],
) -> Refusal | None:
    """Why an activity cannot be logged, given the usable records of the workspace among the
    ones activities name; None when it can."""
    if activity.prospect_id not in prospects:
        return unknown("prospectId")
    if activity.user_id is not None and activity.user_id not in users:
        return unknown("userId")
    if activity.call_id is not None and activity.call_id not in calls:
        return unknown("callId")
    return None


def activity_wanted(activities: list[NewActivity]) -> tuple[set[str], set[str], set[str]]:
    """The prospect, user and call ids the activities name, to look up."""
    return (
        {a.prospect_id for a in activities},
        {a.user_id for a in activities if a.user_id},
        {a.call_id for a in activities if a.call_id},
    )


def activity_documents(
    workspace_id: str,
    activities: list[NewActivity],
    ids: list[str],
    found: tuple[Collection[str], Collection[str], Collection[str]],
    partial: bool,
) -> list[dict | Refusal]:
    """Each activity's stored form under its id, or why it is refused, given the usable
    (prospects, users, calls) among the ones they name (`found`); the first refusal raises
    Refused unless the write is `partial`."""
    prospects, users, calls = found
    out: list[dict | Refusal] = []
    for activity, activity_id in zip(activities, ids, strict=True):
        refusal = activity_refusal(activity, prospects, users, calls)
        if refusal is not None and not partial:
            raise Refused(refusal)
        out.append(refusal or activity.document(workspace_id, activity_id))
    return out


@dataclasses.dataclass
class Recorded:
    """What recording one call did: the call's record and `outcome` (created, existing), and
    which prospect its contact became (`match`, only for a call given by contact); or, in a
    write that records what it can (`partial`), why it refused the call."""

    call: dict | None
    outcome: str | None
    match: dict | None = None
    refusal: Refusal | None = None


@dataclasses.dataclass
class Logged:
    """What logging one activity did: its record and `outcome` (created; existing when its id
    was written before), or why it was refused."""

    activity: dict | None
    outcome: str | None
    refusal: Refusal | None = None


def activity_ids(count: int, once_ids: list[str] | None) -> list[str]:
    return once_ids if once_ids is not None else [new_id() for _ in range(count)]


# A PATCH's fields, as stored: the record fields it may change.
CHANGEABLE = ("notes", "disposition", "meetingBooked", "recordingRef", "recordingDurationSeconds")


def changes_to(doc: dict, changes: dict) -> dict:
    """The fields of a call document that `changes` (CHANGEABLE names) would change: a
    recording sets hasRecording too."""
    if set(changes) - set(CHANGEABLE):
        raise ValueError(f"unknown call changes {sorted(set(changes) - set(CHANGEABLE))}")
    result = {name: value for name, value in changes.items() if doc.get(name) != value}
    if "recordingRef" in changes and not doc.get("hasRecording"):
        result["hasRecording"] = True
    return result


def follows_activity(changed: dict) -> bool:
    """Whether a change moves the call's timeline entry (its words and details)."""
    return "disposition" in changed
