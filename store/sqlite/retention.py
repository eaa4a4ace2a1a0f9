"""Recording retention on SQLite (store/retention.py): claiming the calls whose recordings are
due, removing a reference the provider confirmed gone (with its `call.updated` event, in one
write unit), and postponing a call after a provider failure.

The claim reads the workspace's recorded calls by `calls_ws_recording_due` (workspaceId,
hasRecording, endedAt, recordingRetryAt): the calls that ended before the horizon, oldest
first, from the index alone.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import TYPE_CHECKING

from store.calls import record as call_record
from store.clock import new_id
from store.retention import DueRecording
from store.sqlite.callrows import JSON as CALL_JSON
from store.sqlite.schema import ms, to_doc

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

DUE = (
    'SELECT "_id", recordingRef, recordingAttempts FROM calls '
    "INDEXED BY calls_ws_recording_due "
    "WHERE workspaceId = ? AND hasRecording = 1 AND endedAt < ? "
    "AND (recordingRetryAt IS NULL OR recordingRetryAt <= ?) "
    "ORDER BY endedAt LIMIT ?"
)


def claim_due(
    conn: sqlite3.Connection,
    workspace_id: str,
    ended_before: dt.datetime,
    now: dt.datetime,
    lease: dt.timedelta,
    limit: int,
) -> list[DueRecording]:
    """Claim up to `limit` due calls of the workspace until `now + lease`, in one write unit
    (another process's claim waits for it and then finds them taken)."""
    rows = conn.execute(DUE, (workspace_id, ms(ended_before), ms(now), limit)).fetchall()
    token = new_id()
    conn.executemany(
        'UPDATE calls SET recordingRetryAt = ?, recordingClaim = ? WHERE "_id" = ? '
        "AND workspaceId = ?",
        [(ms(now + lease), token, row[0], workspace_id) for row in rows],
    )
    return [DueRecording(row[0], row[1], token, row[2] or 0) for row in rows]


def forget(
    conn: sqlite3.Connection, workspace_id: str, due: DueRecording, events: EventWriter
) -> dict | None:
    """Remove the call's recording reference, if the call still holds `due.ref`: hasRecording
    false, updatedAt moved (never backwards), the stored record rebuilt, `call.updated`."""
    row = conn.execute(
        'SELECT * FROM calls WHERE "_id" = ? AND workspaceId = ? AND hasRecording = 1 '
        "AND recordingRef = ?",
        (due.call_id, workspace_id, due.ref),
    ).fetchone()
    if row is None:
        return None
    before = to_doc(row)
    after = {
        **before,
        "hasRecording": False,
        "recordingRef": None,
        "updatedAt": max(events.now(), before["updatedAt"]),
    }
    conn.execute(
        "UPDATE calls SET hasRecording = 0, recordingRef = NULL, recordingRetryAt = NULL, "
        'recordingClaim = NULL, recordingAttempts = NULL, updatedAt = ? WHERE "_id" = ? '
        "AND workspaceId = ?",
        (ms(after["updatedAt"]), due.call_id, workspace_id),
    )
    conn.execute(  # the stored record, from the columns as they are now
        f'UPDATE calls SET record = {CALL_JSON} WHERE "_id" = ? AND workspaceId = ?',
        (due.call_id, workspace_id),
    )
    events.record(conn, workspace_id, [("call.updated", due.call_id)])
    return call_record(after)


def postpone(
    conn: sqlite3.Connection, workspace_id: str, due: DueRecording, until: dt.datetime
) -> None:
    """After a provider failure: the call is due again at `until`, one more failure counted
    (only while `due`'s claim is the call's)."""
    conn.execute(
        "UPDATE calls SET recordingRetryAt = ?, recordingAttempts = ?, recordingClaim = NULL "
        'WHERE "_id" = ? AND workspaceId = ? AND recordingClaim = ?',
        (ms(until), due.attempts + 1, due.call_id, workspace_id, due.token),
    )
