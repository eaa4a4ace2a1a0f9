"""The dialer's bodies as store input: the rules of a call or an activity that JSON Schema does
not express (times in order and not in the future, phone numbers readable, a prospect by id or
by contact, a recording's two fields together), and the store's refusals as problems.

Bodies reach these functions valid for their schema (schemas/requests/call-create.json,
call-update.json, activity-create.json). Each returns the store's input and the problems found,
each `{"pointer", "detail"}` under `at` (`/calls/7` in a batch), so that the API (400) and the
import (a rejected line) refuse the same bodies with the same words.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from handlers.errors import APIError, location
from store.ingest import NewActivity, NewCall, Refusal

FUTURE = dt.timedelta(minutes=1)  # how far ahead of the server's clock an instant may be
EARLIEST = dt.datetime(1970, 1, 1)
UNREADABLE_PHONE = "is not a phone number that can be read; send it in E.164, such as +14155550101"
Problems = list[dict[str, str]]
Normalize = Callable[[str], str | None]


def canonical_sid(sid: str) -> str:
    """A provider SID as the provider spells it: its two-letter prefix (the schema's CA or RE),
    then lower-case hex, however the hex digits came."""
    return sid[:2] + sid[2:].lower()


def instant(value: str, pointer: str, problems: Problems) -> dt.datetime | None:
    """An instant of a body (RFC 3339 with an offset, its form checked by the schema) as the
    store's naive UTC datetime, truncated to the millisecond."""
    date, _, rest = value.partition("T")
    clock, fraction = rest[:8], ""
    zone = rest[8:]
    if zone.startswith("."):
        digits = len(zone) - len(zone[1:].lstrip("0123456789"))
        fraction, zone = zone[1:digits][:6], zone[digits:]
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        parsed = dt.datetime.fromisoformat(
            f"{date}T{clock}{'.' + fraction.ljust(6, '0') if fraction else ''}{zone}"
        )
        parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    except (ValueError, OverflowError):
        problems.append({"pointer": pointer, "detail": "must be a real date and time"})
        return None
    if parsed < EARLIEST:
        problems.append({"pointer": pointer, "detail": "must be in 1970 or later"})
        return None
    return parsed.replace(microsecond=parsed.microsecond // 1000 * 1000)


def not_ahead(
    value: dt.datetime | None, now: dt.datetime, pointer: str, problems: Problems
) -> None:
    if value is not None and value > now + FUTURE:
        problems.append(
            {"pointer": pointer, "detail": "must not be more than a minute in the future"}
        )


def call_input(
    body: dict, normalize_phone: Normalize, now: dt.datetime, at: str = ""
) -> tuple[NewCall | None, Problems]:
    """A call body as NewCall, or the problems that refuse it."""
    problems: Problems = []
    where = f"#{at}/"
    prospect_id, contact = body.get("prospectId"), body.get("prospect")
    if prospect_id is not None and contact is not None:
        problems.append(
            {"pointer": where + "prospect", "detail": "cannot be combined with prospectId"}
        )
    elif prospect_id is None and contact is None:
        problems.append(
            {
                "pointer": where + "prospectId",
                "detail": "is required (or prospect: a contact to match or create)",
            }
        )
    if contact is not None:
        phone = contact.get("phoneNumber")
        if isinstance(phone, str) and phone.strip() and normalize_phone(phone) is None:
            problems.append({"pointer": where + "prospect/phoneNumber", "detail": UNREADABLE_PHONE})
    numbers = {}
    for name in ("fromNumber", "toNumber"):
        numbers[name] = normalize_phone(body[name])
        if numbers[name] is None:
            problems.append({"pointer": where + name, "detail": UNREADABLE_PHONE})
    started = instant(body["startedAt"], where + "startedAt", problems)
    answered = (
        instant(body["answeredAt"], where + "answeredAt", problems)
        if body.get("answeredAt") is not None
        else None
    )
    ended = instant(body["endedAt"], where + "endedAt", problems)
    if started and answered and answered < started:
        problems.append({"pointer": where + "answeredAt", "detail": "must not be before startedAt"})
    elif started and ended and ended < (answered or started):
        before = "answeredAt" if answered else "startedAt"
        problems.append({"pointer": where + "endedAt", "detail": f"must not be before {before}"})
    not_ahead(ended, now, where + "endedAt", problems)
    sid, seconds = body.get("recordingSid"), body.get("recordingDurationSeconds")
    if sid is not None and seconds is None:
        problems.append(
            {
                "pointer": where + "recordingDurationSeconds",
                "detail": "is required with recordingSid",
            }
        )
    elif sid is None and seconds is not None:
        problems.append(
            {
                "pointer": where + "recordingSid",
                "detail": "is required with recordingDurationSeconds",
            }
        )
    if problems or started is None or ended is None:
        return None, problems
    return (
        NewCall(
            user_id=body["userId"].lower(),
            direction=body["direction"],
            disposition=body["disposition"],
            from_number=numbers["fromNumber"] or "",
            to_number=numbers["toNumber"] or "",
            started_at=started,
            ended_at=ended,
            prospect_id=prospect_id.lower() if prospect_id is not None else None,
            contact=contact,
            list_id=body["listId"].lower() if body.get("listId") is not None else None,
            answered_at=answered,
            meeting_booked=body.get("meetingBooked", False),
            notes=body.get("notes"),
            sid=canonical_sid(body["providerCallSid"]) if body.get("providerCallSid") else None,
            recording_ref=canonical_sid(sid) if sid else None,
            recording_duration_seconds=seconds if sid else None,
        ),
        problems,
    )


def call_changes(body: dict) -> tuple[dict, Problems]:
    """A PATCH body as the store's changes (store.ingest.CHANGEABLE), or its problems."""
    changes: dict = {
        name: body[name] for name in ("notes", "disposition", "meetingBooked") if name in body
    }
    sid, seconds = body.get("recordingSid"), body.get("recordingDurationSeconds")
    if (sid is None) != (seconds is None):
        missing = "recordingDurationSeconds" if seconds is None else "recordingSid"
        other = "recordingSid" if seconds is None else "recordingDurationSeconds"
        return {}, [{"pointer": f"#/{missing}", "detail": f"is required with {other}"}]
    if sid is not None:
        changes["recordingRef"] = canonical_sid(sid)
        changes["recordingDurationSeconds"] = seconds
    return changes, []


def activity_input(body: dict, now: dt.datetime) -> tuple[NewActivity | None, Problems]:
    """An activity body as NewActivity, or the problems that refuse it."""
    problems: Problems = []
    occurred = instant(body["occurredAt"], "#/occurredAt", problems)
    not_ahead(occurred, now, "#/occurredAt", problems)
    details = dict(body["details"])
    if body["type"] == "meeting_booked" and details.get("scheduledFor") is not None:
        details["scheduledFor"] = instant(
            details["scheduledFor"], "#/details/scheduledFor", problems
        )
    if problems or occurred is None:
        return None, problems
    summary = body.get("summary")
    return (
        NewActivity(
            prospect_id=body["prospectId"].lower(),
            type=body["type"],
            occurred_at=occurred,
            details=details,
            user_id=body["userId"].lower() if body.get("userId") is not None else None,
            summary=summary.strip() if summary and summary.strip() else None,
            call_id=body["callId"].lower() if body.get("callId") is not None else None,
        ),
        problems,
    )


REFERENCES = {
    "userId": "must be an existing, non-deleted user of your workspace",
    "prospectId": "must be a prospect of your workspace",
    "listId": "must be a list of your workspace",
    "callId": "must be a call of your workspace",
}


def refused(refusal: Refusal) -> APIError:
    """The problem of a store refusal: 422 `invalid_reference` (one answer for an unknown id,
    a deleted user and another workspace's record) or 409 `call_exists` with the call's id."""
    pointer = refusal.pointer()
    errors = [{"pointer": pointer, "detail": refusal.detail}]
    if refusal.code == "call_exists":
        return APIError(
            "call_exists",
            f"{location(pointer)}: a call with this providerCallSid is recorded in your "
            "workspace already, with other content; change it with PATCH /v1/calls/{id}",
            errors,
            extra={"callId": refusal.call_id},
        )
    return APIError("invalid_reference", f"{location(pointer)} {REFERENCES[refusal.field]}", errors)
