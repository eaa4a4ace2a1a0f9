"""Deleting a whole workspace on SQLite, step by step (store/workspace_deletion.py): each step a
write unit of its own, each idempotent. What the rows held is zeroed in the file as they are
deleted (secure_delete, store/sqlite/engine.py); the scrub truncates the log afterwards."""

from __future__ import annotations

import sqlite3

from store.records import workspace_record
from store.sqlite.schema import WITHOUT_ROWID, to_doc
from store.sqlite.webhook_endpoints import ENABLED, _disable
from store.workspace_deletion import CALL, DISABLED_REASON, PROVIDER_CALL, purge_order, split_key


def find(conn: sqlite3.Connection, workspace_id: str) -> dict | None:
    row = conn.execute('SELECT * FROM workspaces WHERE "_id" = ?', (workspace_id,)).fetchone()
    return row and workspace_record(to_doc(row))


def begin(conn: sqlite3.Connection, workspace_id: str, now: int) -> dict | None:
    """Mark the workspace, delete its keys, disable its webhook endpoints: one unit."""
    conn.execute(
        'UPDATE workspaces SET deletingAt = coalesce(deletingAt, ?) WHERE "_id" = ?',
        (now, workspace_id),
    )
    record = find(conn, workspace_id)
    if record is None:
        return None
    conn.execute("DELETE FROM api_keys WHERE workspaceId = ?", (workspace_id,))
    endpoints = conn.execute(
        'SELECT "_id" FROM webhook_endpoints WHERE workspaceId = ? AND status = ?',
        (workspace_id, ENABLED),
    ).fetchall()
    for (endpoint_id,) in endpoints:
        _disable(conn, workspace_id, endpoint_id, DISABLED_REASON, now)
    return record


def recordings(
    conn: sqlite3.Connection, workspace_id: str, after: str, limit: int
) -> list[tuple[str, str]]:
    """The calls' recordings by call id (the primary key: one walk of the table in all), then
    the provider calls' by SID."""
    after_call, after_sid = split_key(after)
    found = [
        (CALL + call_id, ref)
        for call_id, ref in conn.execute(
            'SELECT "_id", recordingRef FROM calls WHERE "_id" > ? AND workspaceId = ? '
            'AND recordingRef IS NOT NULL ORDER BY "_id" LIMIT ?',
            (after_call, workspace_id, limit),
        )
    ]
    if len(found) < limit:
        found += [
            (PROVIDER_CALL + sid, ref)
            for sid, ref in conn.execute(
                "SELECT callSid, recordingSid FROM provider_calls WHERE workspaceId = ? "
                "AND callSid > ? AND recordingSid IS NOT NULL ORDER BY callSid LIMIT ?",
                (workspace_id, after_sid, limit - len(found)),
            )
        ]
    return found


def forget_recordings(conn: sqlite3.Connection, workspace_id: str, keys: list[str]) -> None:
    for key in keys:
        if key.startswith(CALL):
            conn.execute(
                'UPDATE calls SET recordingRef = NULL WHERE "_id" = ? AND workspaceId = ?',
                (key.removeprefix(CALL), workspace_id),
            )
        elif key.startswith(PROVIDER_CALL):
            conn.execute(
                "UPDATE provider_calls SET recordingSid = NULL "
                "WHERE workspaceId = ? AND callSid = ?",
                (workspace_id, key.removeprefix(PROVIDER_CALL)),
            )


def _tables(conn: sqlite3.Connection) -> list[str]:
    """The file's tables that hold workspaces' records (a `workspaceId` column), in purge
    order: a table added later is found without being named anywhere."""
    names = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    return purge_order(
        [
            name
            for name in names
            if any(
                column[1] == "workspaceId" for column in conn.execute(f"PRAGMA table_info({name})")
            )
        ]
    )


def _key_columns(conn: sqlite3.Connection, table: str) -> str:
    """What identifies a row of `table`: its rowid, or its primary key's columns."""
    if table not in WITHOUT_ROWID:
        return "rowid"
    key = sorted(
        (column[5], column[1])
        for column in conn.execute(f"PRAGMA table_info({table})")
        if column[5]
    )
    return ", ".join(f'"{name}"' for _, name in key)


def purge(conn: sqlite3.Connection, workspace_id: str, batch: int) -> int:
    """Delete at most `batch` rows of the workspace, from the first table in purge order that
    still has some; how many."""
    for table in _tables(conn):
        key = _key_columns(conn, table)
        deleted = conn.execute(
            f"DELETE FROM {table} WHERE ({key}) IN "
            f"(SELECT {key} FROM {table} WHERE workspaceId = ? LIMIT ?)",
            (workspace_id, batch),
        ).rowcount
        if deleted:
            return deleted
    return 0


def remove(conn: sqlite3.Connection, workspace_id: str) -> bool:
    return bool(conn.execute('DELETE FROM workspaces WHERE "_id" = ?', (workspace_id,)).rowcount)
