"""Calls the telephony provider reports, backend-neutral: what is remembered per provider call
SID between its callbacks (progress instants, a recording that came first, a final status kept
aside), how a final status becomes the NewCall that `POST /v1/calls` would record, and the API
form of a callback kept aside.

A call's state is one record per (workspace, CallSid), written by ProviderCalls (both
backends), with `expiresAt` `provider_pending_days` after its last change; the expiry sweep
removes it then. Instants inside `final` are integer milliseconds since the epoch, so the same
dict is stored by both backends.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import email.utils
import re
from collections.abc import Callable, Mapping

from store.ingest import NewCall

EPOCH = dt.datetime(1970, 1, 1)
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
PROGRESS = ("initiated", "ringing", "in-progress")
FINAL = ("completed", "busy", "no-answer", "failed", "canceled")
DISPOSITIONS = {
    "no-answer": "no_answer",
    "canceled": "no_answer",
    "busy": "busy",
    "failed": "failed",
}
# Why a final status is kept aside (a pending callback's `reason`).
REASONS = (
    "missing_user",
    "unknown_user",
    "unknown_prospect",
    "unknown_list",
    "unreadable_number",
)
REFUSED_FIELD_REASONS = {
    "userId": "unknown_user",
    "prospectId": "unknown_prospect",
    "listId": "unknown_list",
}


def ms(instant: dt.datetime) -> int:
    return (instant - EPOCH) // dt.timedelta(milliseconds=1)


def from_ms(value: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=value)


def canonical_call_sid(sid: str) -> str:
    """A CallSid as stored: `CA` and lower-case hex (handlers.ingest.canonical_sid's form)."""
    return sid[:2] + sid[2:].lower()


def provider_instant(value: str | None, fallback: dt.datetime) -> dt.datetime:
    """A callback's `Timestamp` (RFC 2822, as the provider sends it; or ISO 8601) as a naive
    UTC datetime in whole milliseconds, never after `fallback` (when it arrived); `fallback`
    when absent or unreadable."""
    parsed: dt.datetime | None = None
    if value:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            try:
                parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                parsed = None
    if parsed is None:
        return fallback
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    parsed = parsed.replace(microsecond=parsed.microsecond // 1000 * 1000)
    return min(parsed, fallback)


def disposition(status: str, answered_by: str | None) -> str:
    """The call's disposition for a final CallStatus (docs/api.md "Calls from the provider")."""
    if status == "completed":
        return "voicemail" if (answered_by or "").startswith("machine") else "connected"
    return DISPOSITIONS[status]


def seconds(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0


def context_id(value: str | None) -> str | None:
    """An id of the callback URL's query, lower case; a malformed one is kept as given (it
    then names no record and the callback is kept aside)."""
    if value is None or value == "":
        return None
    return value.lower() if UUID.match(value) else value


def final_status(form: Mapping[str, str], query: Mapping[str, str], now: dt.datetime) -> dict:
    """What is kept of a final status callback: the form's call, the URL's context, instants
    in milliseconds."""
    direction = form.get("Direction", "")
    return {
        "status": form["CallStatus"],
        "direction": "outbound" if direction.startswith("outbound") else "inbound",
        "from": form.get("From", ""),
        "to": form.get("To", ""),
        "endedAt": ms(provider_instant(form.get("Timestamp"), now)),
        "duration": seconds(form.get("CallDuration")),
        "answeredBy": form.get("AnsweredBy") or None,
        "userId": context_id(query.get("userId")),
        "prospectId": context_id(query.get("prospectId")),
        "listId": context_id(query.get("listId")),
    }


@dataclasses.dataclass(frozen=True)
class Times:
    started: dt.datetime
    answered: dt.datetime | None
    ended: dt.datetime


def call_times(final: dict, state: dict | None) -> Times:
    """startedAt from `initiated` (else Timestamp - CallDuration), answeredAt from
    `in-progress` (else, for an answered call, Timestamp - CallDuration), endedAt from the final
    Timestamp; kept in order."""
    state = state or {}
    ended = from_ms(final["endedAt"])
    before = ended - dt.timedelta(seconds=final["duration"])
    started = min(state.get("initiatedAt") or before, ended)
    answered = None
    if disposition(final["status"], final["answeredBy"]) in ("connected", "voicemail"):
        answered = min(max(state.get("answeredAt") or before, started), ended)
    return Times(started, answered, ended)


def new_call(
    final: dict,
    state: dict | None,
    sid: str,
    user_id: str,
    normalize_phone: Callable[[str], str | None],
) -> NewCall | None:
    """The call `POST /v1/calls` would record for this final status; None when a number of
    it cannot be read."""
    from_number, to_number = normalize_phone(final["from"]), normalize_phone(final["to"])
    if from_number is None or to_number is None:
        return None
    times = call_times(final, state)
    callee = to_number if final["direction"] == "outbound" else from_number
    prospect_id = final["prospectId"]
    return NewCall(
        user_id=user_id,
        direction=final["direction"],
        disposition=disposition(final["status"], final["answeredBy"]),
        from_number=from_number,
        to_number=to_number,
        started_at=times.started,
        answered_at=times.answered,
        ended_at=times.ended,
        prospect_id=prospect_id,
        contact=None if prospect_id else {"phoneNumber": callee},
        list_id=final["listId"],
        sid=sid,
    )


def pending_record(state: dict) -> dict:
    """A callback kept aside, as GET /v1/provider/pending-calls shows it."""
    final = state["final"]
    times = call_times(final, state)
    return {
        "callSid": state["callSid"],
        "status": final["status"],
        "disposition": disposition(final["status"], final["answeredBy"]),
        "direction": final["direction"],
        "fromNumber": final["from"],
        "toNumber": final["to"],
        "startedAt": times.started,
        "answeredAt": times.answered,
        "endedAt": times.ended,
        "userId": final["userId"],
        "prospectId": final["prospectId"],
        "listId": final["listId"],
        "reason": state["pendingReason"],
        "hasRecording": state.get("recordingSid") is not None,
        "receivedAt": state["receivedAt"],
        "expiresAt": state["expiresAt"],
    }
