"""What is remembered of the provider's calls between their callbacks, on SQLite (the rules:
store/provider_calls.py): one row per (workspace, CallSid), every change one upsert."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

from store.provider_calls import pending_record
from store.sqlite.engine import Engine
from store.sqlite.schema import ms, to_doc

STATE = "SELECT * FROM provider_calls WHERE workspaceId = ? AND callSid = ?"


def _state(row: sqlite3.Row | None) -> dict | None:
    if row is None:
        return None
    doc = to_doc(row)
    doc.pop("workspaceId")
    return doc


def _upsert(conn: sqlite3.Connection, workspace_id: str, sid: str, expires_at: int) -> None:
    """The call's row, created empty when it is new; its expiry moved to `expires_at`."""
    conn.execute(
        "INSERT INTO provider_calls (workspaceId, callSid, expiresAt) VALUES (?, ?, ?) "
        "ON CONFLICT (workspaceId, callSid) DO UPDATE SET expiresAt = excluded.expiresAt",
        (workspace_id, sid, expires_at),
    )


def delete_expired_provider_calls(conn: sqlite3.Connection, now: dt.datetime, limit: int) -> int:
    """Delete up to `limit` expired rows, oldest first (index provider_calls_expire)."""
    return conn.execute(
        "DELETE FROM provider_calls WHERE (workspaceId, callSid) IN (SELECT workspaceId, callSid "
        "FROM provider_calls WHERE expiresAt <= ? ORDER BY expiresAt LIMIT ?)",
        (ms(now), limit),
    ).rowcount


class ProviderCalls:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def get(self, workspace_id: str, call_sid: str) -> dict | None:
        def get(conn: sqlite3.Connection) -> dict | None:
            return _state(conn.execute(STATE, (workspace_id, call_sid)).fetchone())

        return await self.engine.read(get, quick=True)

    async def progress(
        self,
        workspace_id: str,
        call_sid: str,
        *,
        initiated_at: dt.datetime | None,
        answered_at: dt.datetime | None,
        expires_at: dt.datetime,
    ) -> None:
        def note(conn: sqlite3.Connection) -> None:
            _upsert(conn, workspace_id, call_sid, ms(expires_at))
            conn.execute(
                "UPDATE provider_calls SET initiatedAt = coalesce(initiatedAt, ?), "
                "answeredAt = coalesce(answeredAt, ?) WHERE workspaceId = ? AND callSid = ?",
                (ms(initiated_at), ms(answered_at), workspace_id, call_sid),
            )

        await self.engine.write(note)

    async def hold_recording(
        self,
        workspace_id: str,
        call_sid: str,
        recording_sid: str,
        duration_seconds: int,
        expires_at: dt.datetime,
    ) -> None:
        def hold(conn: sqlite3.Connection) -> None:
            _upsert(conn, workspace_id, call_sid, ms(expires_at))
            conn.execute(
                "UPDATE provider_calls SET recordingSid = ?, recordingDurationSeconds = ? "
                "WHERE workspaceId = ? AND callSid = ?",
                (recording_sid, duration_seconds, workspace_id, call_sid),
            )

        await self.engine.write(hold)

    async def keep_pending(
        self,
        workspace_id: str,
        call_sid: str,
        final: dict,
        reason: str,
        received_at: dt.datetime,
        expires_at: dt.datetime,
    ) -> None:
        def keep(conn: sqlite3.Connection) -> None:
            _upsert(conn, workspace_id, call_sid, ms(expires_at))
            conn.execute(
                "UPDATE provider_calls SET final = ?, pendingReason = ?, "
                "receivedAt = coalesce(receivedAt, ?) "
                "WHERE workspaceId = ? AND callSid = ? AND callId IS NULL",
                (json.dumps(final), reason, ms(received_at), workspace_id, call_sid),
            )

        await self.engine.write(keep)

    async def settle(
        self, workspace_id: str, call_sid: str, call_id: str, expires_at: dt.datetime
    ) -> None:
        def settle(conn: sqlite3.Connection) -> None:
            _upsert(conn, workspace_id, call_sid, ms(expires_at))
            conn.execute(
                "UPDATE provider_calls SET callId = ?, final = NULL, pendingReason = NULL, "
                "receivedAt = NULL WHERE workspaceId = ? AND callSid = ?",
                (call_id, workspace_id, call_sid),
            )

        await self.engine.write(settle)

    async def pending(self, workspace_id: str, now: dt.datetime, limit: int = 1000) -> list[dict]:
        def pending(conn: sqlite3.Connection) -> list[dict]:
            rows = conn.execute(
                "SELECT * FROM provider_calls WHERE workspaceId = ? AND receivedAt IS NOT NULL "
                "AND expiresAt > ? ORDER BY receivedAt DESC, callSid DESC LIMIT ?",
                (workspace_id, ms(now), limit),
            )
            return [pending_record(state) for row in rows if (state := _state(row))]

        return await self.engine.read(pending)
