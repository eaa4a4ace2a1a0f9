"""An erasure's work on SQLite (store/erasures.py has the rules): each prospect of a request is
erased in one write transaction, with the request's progress, so a process killed at any point
leaves either all of it or none of it.

The unit rewrites the retained events that carry the person (a prospect's and its activities'
to `{"id", "erased": true}`, a call's to its erased record) and the webhook deliveries made of
them, rewrites the person's calls (store.calls.erased_changes), then deletes the prospect as
DELETE /prospects/{id} does (store/sqlite/prospect_changes.py `delete_unit`: tombstone,
memberships, counts, timeline, `list.updated` and `prospect.deleted`), records each call's
`call.updated`, and turns the stored Idempotency-Key answers that named the prospect or its
calls into the `erased` problem. The reads are served by indexes (events_ws_resource,
calls_ws_prospect_newest, activities_ws_prospect_timeline); the stored answers are the
workspace's of the last 24 hours, read by its primary key's prefix.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

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
)
from store.events import encode
from store.sqlite.events import SERVED
from store.sqlite.matching import marks
from store.sqlite.prospect_changes import delete_unit
from store.sqlite.schema import ms, to_doc, to_row

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

CHUNK = 500  # ids per IN list


def chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]


# The erased data of events, as SQL over the event's row: a prospect's or an activity's
# `{"id", "erased": true}`, a call's its erased record as the call now stores it.
ERASED_SQL = "json_object('id', resourceId, 'erased', json('true'))"
CALL_SQL = (
    '(SELECT record FROM calls WHERE calls."_id" = events.resourceId '
    "AND calls.workspaceId = events.workspaceId)"
)


def _rewrite(
    conn: sqlite3.Connection, workspace_id: str, ids: Sequence[str], types: tuple, data: str
) -> list[str]:
    """Set the data of the events of `types` about the records `ids` to `data` (SQL over the
    event's row, ERASED_SQL or CALL_SQL); the ids of the events rewritten."""
    rewritten: list[str] = []
    for part in chunks(ids):
        found = conn.execute(
            f'SELECT "_id" FROM events WHERE workspaceId = ? AND resourceId IN ({marks(part)}) '
            f"AND type IN ({marks(types)})",
            (workspace_id, *part, *types),
        ).fetchall()
        events = [row[0] for row in found]
        for few in chunks(events):
            conn.execute(
                f"UPDATE events SET data = {data} "
                f'WHERE workspaceId = ? AND "_id" IN ({marks(few)})',
                (workspace_id, *few),
            )
        rewritten += events
    return rewritten


def _redeliver(conn: sqlite3.Connection, workspace_id: str, event_ids: Sequence[str]) -> None:
    """Deliveries of rewritten events carry the events as they are now (sent or not)."""
    for part in chunks(event_ids):
        conn.execute(
            f"UPDATE webhook_deliveries SET event = (SELECT {SERVED} FROM events e "
            'WHERE e."_id" = webhook_deliveries.eventId AND e.workspaceId = ?) '
            f"WHERE workspaceId = ? AND eventId IN ({marks(part)})",
            (workspace_id, workspace_id, *part),
        )


def _forget_answers(conn: sqlite3.Connection, workspace_id: str, ids: Sequence[str]) -> None:
    """Stored Idempotency-Key answers naming any of `ids` become the `erased` problem (the key
    is kept, so a retry gets 410, never a second write)."""
    for part in chunks(ids):
        found = " OR ".join(["instr(body, ?) > 0"] * len(part))
        conn.execute(
            "UPDATE idempotency SET status = 410, body = ?, contentType = ?, location = NULL "
            f"WHERE workspaceId = ? AND status IS NOT NULL AND status != 410 AND ({found})",
            (ERASED_ANSWER, PROBLEM_TYPE, workspace_id, *part),
        )


def erase_unit(
    conn: sqlite3.Connection, claim: ErasureClaim, prospect_id: str, events: EventWriter
) -> list[str] | None:
    """Erase one prospect of the claimed request; the recording references it left to delete
    at the provider, or None when the claim lost its lease."""
    ws = claim.workspace_id
    row = conn.execute(
        'SELECT done, counts, callIds, recordings FROM erasures WHERE "_id" = ? '
        "AND workspaceId = ? AND leaseToken = ?",
        (claim.id, ws, claim.token),
    ).fetchone()
    if row is None:
        return None
    doc = to_doc(row)
    if prospect_id in doc["done"]:
        return []
    now = events.now()
    calls = [
        to_doc(call)
        for call in conn.execute(
            "SELECT * FROM calls WHERE workspaceId = ? AND prospectId = ?", (ws, prospect_id)
        )
    ]
    refs = [call["recordingRef"] for call in calls if call.get("recordingRef")]
    activities = [
        row[0]
        for row in conn.execute(
            'SELECT "_id" FROM activities WHERE workspaceId = ? AND prospectId = ?',
            (ws, prospect_id),
        )
    ]
    rewritten = _rewrite(conn, ws, [prospect_id], PERSON_EVENTS, ERASED_SQL)
    rewritten += _rewrite(conn, ws, activities, ACTIVITY_EVENTS, ERASED_SQL)
    for call in calls:
        changes = erased_changes(call, now)
        text = encode(call_record({**call, **changes}))
        stored = to_row(changes)
        sets = ", ".join(f'"{name}" = ?' for name in stored)
        conn.execute(
            f'UPDATE calls SET {sets}, record = ? WHERE "_id" = ? AND workspaceId = ?',
            (*stored.values(), text, call["_id"], ws),
        )
    rewritten += _rewrite(conn, ws, [c["_id"] for c in calls], CALL_EVENTS, CALL_SQL)
    _redeliver(conn, ws, rewritten)
    _forget_answers(conn, ws, [prospect_id, *(c["_id"] for c in calls)])
    deleted = delete_unit(conn, ws, prospect_id, events)
    events.record(conn, ws, [("call.updated", call["_id"]) for call in calls])
    counts = doc["counts"]
    counts["prospects"] += int(bool(deleted))
    counts["activities"] += len(activities)
    counts["calls"] += len(calls)
    counts["events"] += len(rewritten)
    known = doc["callIds"]
    call_ids = known + [c["_id"] for c in calls if c["_id"] not in known]
    recordings = doc["recordings"] + [r for r in refs if r not in doc["recordings"]]
    conn.execute(
        "UPDATE erasures SET done = ?, counts = ?, callIds = ?, recordings = ?, "
        'leaseUntil = ? WHERE "_id" = ?',  # each step renews the lease
        (
            *(to_row({"done": [*doc["done"], prospect_id]}).values()),
            *(to_row({"counts": counts}).values()),
            *(to_row({"callIds": call_ids}).values()),
            *(to_row({"recordings": recordings}).values()),
            ms(now + LEASE),
            claim.id,
        ),
    )
    return refs
