"""Idempotency-Key records on SQLite: the claim a request takes before it runs, and the stored
response, written in the same transaction as the write it answers (`write_once`), so that the
two commit together or not at all (store/idempotency.py)."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from store.idempotency import (
    IdempotentWrite,
    KeyState,
    Replayed,
    StoredResponse,
    new_seed,
    stale,
    this_process,
)
from store.sqlite.engine import Engine
from store.sqlite.schema import ms, to_doc

T = TypeVar("T")


def delete_expired_idempotency(conn: sqlite3.Connection, now: dt.datetime, limit: int) -> int:
    """Delete up to `limit` expired Idempotency-Key records, oldest first (index
    idempotency_expire); how many were deleted."""
    return conn.execute(
        "DELETE FROM idempotency WHERE (workspaceId, key) IN (SELECT workspaceId, key "
        "FROM idempotency WHERE expiresAt <= ? ORDER BY expiresAt LIMIT ?)",
        (ms(now), limit),
    ).rowcount


def _response(row: sqlite3.Row) -> StoredResponse | None:
    if row["status"] is None:
        return None
    return StoredResponse(row["status"], row["body"], row["contentType"], row["location"])


def _answering(fn: Callable[..., T], once: IdempotentWrite) -> Callable[..., T]:
    """The write unit `fn` made idempotent on `once`'s key: it writes nothing when another
    attempt stored the key's response first (Replayed), and stores its own response in the
    same transaction."""

    def unit(conn: sqlite3.Connection, *args: Any) -> T:
        where = (once.workspace_id, once.key)
        row = conn.execute(
            "SELECT status, body, contentType, location FROM idempotency "
            "WHERE workspaceId = ? AND key = ?",
            where,
        ).fetchone()
        if row is not None and (stored := _response(row)) is not None:
            raise Replayed(stored)
        result = fn(conn, *args)
        response = once.answer(result)
        values = (response.status, response.body, response.content_type, response.location)
        updated = conn.execute(
            "UPDATE idempotency SET status = ?, body = ?, contentType = ?, location = ? "
            "WHERE workspaceId = ? AND key = ?",
            (*values, *where),
        ).rowcount
        if not updated:  # the claim is gone (freed by a failed attempt): the record anew
            conn.execute(
                "INSERT INTO idempotency (workspaceId, key, fingerprint, seed, status, body, "
                "contentType, location, lockedUntil, expiresAt) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*where, once.fingerprint, once.seed, *values, 0, ms(once.expires_at)),
            )
        return result

    return unit


async def write_once(
    engine: Engine,
    once: IdempotentWrite | None,
    fn: Callable[..., T],
    *args: Any,
    timeout: float | None = None,
) -> T:
    """`engine.write(fn, *args)`, and with an Idempotency-Key (`once`) the key's response
    stored in the same transaction (store/idempotency.py)."""
    if once is None:
        return await engine.write(fn, *args, timeout=timeout)
    result = await engine.write(_answering(fn, once), *args, timeout=timeout)
    once.stored = True
    return result


class Idempotency:
    """Idempotency-Key records of a workspace: claimed while a request runs, then holding the
    response to replay, until they expire (the expiry sweep deletes them, and a claim replaces
    its own key's expired record)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def begin(
        self,
        workspace_id: str,
        key: str,
        fingerprint: str,
        now: dt.datetime,
        lock: dt.timedelta,
        ttl: dt.timedelta,
    ) -> KeyState:
        """Claim the key, or the state of the record that holds it (store.contract)."""
        holder = this_process()

        def begin(conn: sqlite3.Connection) -> KeyState:
            # An expired record of this key is gone for good; the others wait for the expiry
            # sweep (delete_expired_idempotency, in bounded batches), not for this request.
            conn.execute(
                "DELETE FROM idempotency WHERE workspaceId = ? AND key = ? AND expiresAt <= ?",
                (workspace_id, key, ms(now)),
            )
            row = conn.execute(
                "SELECT * FROM idempotency WHERE workspaceId = ? AND key = ?", (workspace_id, key)
            ).fetchone()
            seed = new_seed()
            if row is not None:
                state = to_doc(row)
                if not stale(state, now, fingerprint):
                    seed = state["seed"] or ""
                    return KeyState(False, state["fingerprint"], seed, _response(row))
                seed = state["seed"] or seed  # taken over: the same derived ids
            conn.execute(
                "INSERT OR REPLACE INTO idempotency (workspaceId, key, fingerprint, seed, "
                "holder, lockedUntil, expiresAt) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (workspace_id, key, fingerprint, seed, holder, ms(now + lock), ms(now + ttl)),
            )
            return KeyState(True, fingerprint, seed)

        return await self.engine.write(begin)

    async def complete(
        self,
        workspace_id: str,
        key: str,
        status: int,
        body: str,
        content_type: str,
        location: str | None,
    ) -> None:
        """Store the response of a request that wrote nothing (a client error)."""

        def complete(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE idempotency SET status = ?, body = ?, contentType = ?, "
                "location = ? WHERE workspaceId = ? AND key = ?",
                (status, body, content_type, location, workspace_id, key),
            )

        await self.engine.write(complete)

    async def release(self, workspace_id: str, key: str) -> None:
        """Free this process's claim of the key (its request failed with a 5xx: the retry may
        run again); the claim stays, with its seed, for the retry to take over."""
        holder = this_process()

        def release(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE idempotency SET lockedUntil = 0, holder = NULL WHERE workspaceId = ? "
                "AND key = ? AND status IS NULL AND holder IS ?",
                (workspace_id, key, holder),
            )

        await self.engine.write(release)
