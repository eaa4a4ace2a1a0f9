"""A hand-written check of schemas/requests/call-create.json for the import's hot path.

The JSON Schema validator costs more per call than the rest of an import's work for it; this
check says in a fraction of that whether a call body is certainly valid. It never accepts a
body the schema refuses (tests/schemas: both are run on generated bodies, valid and broken);
when it is not sure (a `prospect` contact, a float where an integer goes, an unusual string) it
says no, and the caller asks the schema, which decides and words the errors. So the verdict is
always the schema's.
"""

from __future__ import annotations

import re
from typing import Any

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
INSTANT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|z|[+-][0-9]{2}:[0-9]{2})"
)
CALL_SID = re.compile(r"CA[0-9a-fA-F]{32}")
RECORDING_SID = re.compile(r"RE[0-9a-fA-F]{32}")
DIRECTIONS = frozenset(("outbound", "inbound"))
DISPOSITIONS = frozenset(("connected", "no_answer", "voicemail", "busy", "failed", "wrong_number"))
REQUIRED = frozenset(
    ("userId", "direction", "disposition", "fromNumber", "toNumber", "startedAt", "endedAt")
)
ALLOWED = REQUIRED | {
    "prospectId",
    "listId",
    "answeredAt",
    "meetingBooked",
    "notes",
    "providerCallSid",
    "recordingSid",
    "recordingDurationSeconds",
}


def _text(value: Any, pattern: re.Pattern[str]) -> bool:
    return type(value) is str and pattern.fullmatch(value) is not None


def _maybe(value: Any, pattern: re.Pattern[str]) -> bool:
    return value is None or _text(value, pattern)


def certainly_valid(body: Any) -> bool:
    """True only when `body` is valid for requests/call-create.json (False: ask the schema)."""
    if type(body) is not dict:
        return False
    keys = body.keys()
    if not keys >= REQUIRED or not keys <= ALLOWED:
        return False
    get = body.get
    if not (
        _text(body["userId"], UUID)
        and ("prospectId" not in body or _text(body["prospectId"], UUID))
        and _maybe(get("listId"), UUID)
        and type(body["direction"]) is str
        and body["direction"] in DIRECTIONS
        and type(body["disposition"]) is str
        and body["disposition"] in DISPOSITIONS
        and _text(body["startedAt"], INSTANT)
        and _text(body["endedAt"], INSTANT)
        and _maybe(get("answeredAt"), INSTANT)
        and _maybe(get("providerCallSid"), CALL_SID)
        and _maybe(get("recordingSid"), RECORDING_SID)
    ):
        return False
    for name in ("fromNumber", "toNumber"):
        number = body[name]
        if type(number) is not str or not 1 <= len(number) <= 64:
            return False
    if "meetingBooked" in body and type(body["meetingBooked"]) is not bool:
        return False
    notes = get("notes")
    if notes is not None and (type(notes) is not str or len(notes) > 10000):
        return False
    seconds = get("recordingDurationSeconds")
    if (seconds is None) != (get("recordingSid") is None):  # they come together
        return False
    return seconds is None or (type(seconds) is int and 0 <= seconds <= 86400)
