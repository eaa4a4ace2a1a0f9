"""Webhook endpoints on SQLite (store.contract.WebhookEndpoints; the rules in store/webhooks.py).
Every change is one write unit; the fan-out's lease is a token and an instant on the row,
taken by a conditional update inside the writers' lock (BEGIN IMMEDIATE), so two processes
sharing the file never hold one endpoint's fan-out at once."""

from __future__ import annotations

import builtins
import datetime as dt
import json
import sqlite3

from store.clock import new_id
from store.idempotency import IdempotentWrite
from store.paging import Position
from store.sqlite.engine import Engine
from store.sqlite.idempotency import write_once
from store.sqlite.schema import PENDING_ONLY, has_row, insert, instant, ms, to_doc
from store.webhooks import (
    BY_REQUEST,
    DISABLED,
    ENABLED,
    FAILED,
    FanoutClaim,
    endpoint_changes,
    endpoint_document,
    endpoint_record,
    rotated,
)

# The enabled endpoints whose fan-out is due at an instant: what claim_fanout takes, and what
# its look before the write lock asks for, in one place so the two never differ.
FANOUT_DUE = "FROM webhook_endpoints WHERE status = ? AND fanoutAt <= ?"
COLUMNS = (
    '"_id", workspaceId, url, eventTypes, description, status, disabledReason, disabledAt, '
    "createdAt, updatedAt"
)


def dump_secrets(secrets: list[dict]) -> str:
    return json.dumps([{"secret": s["secret"], "expiresAt": ms(s["expiresAt"])} for s in secrets])


def load_secrets(text: str) -> list[dict]:
    return [{"secret": s["secret"], "expiresAt": instant(s["expiresAt"])} for s in json.loads(text)]


def _get(conn: sqlite3.Connection, workspace_id: str, endpoint_id: str) -> dict | None:
    row = conn.execute(
        f'SELECT {COLUMNS} FROM webhook_endpoints WHERE "_id" = ? AND workspaceId = ?',
        (endpoint_id, workspace_id),
    ).fetchone()
    return endpoint_record(to_doc(row)) if row else None


def fail_pending(conn: sqlite3.Connection, workspace_id: str, endpoint_id: str, now: int) -> None:
    """A disabled endpoint gets no attempts: its pending deliveries fail (`recover` re-sends),
    and its leases go (the outcomes of the attempts in flight change no delivery)."""
    conn.execute(
        "UPDATE webhook_deliveries INDEXED BY webhook_deliveries_pending_due "
        "SET state = ?, nextAttemptAt = NULL, updatedAt = ? "
        f"WHERE {PENDING_ONLY} AND endpointId = ? AND workspaceId = ?",
        (FAILED, now, endpoint_id, workspace_id),
    )
    conn.execute(
        "DELETE FROM webhook_leases WHERE workspaceId = ? AND endpointId = ?",
        (workspace_id, endpoint_id),
    )


def _disable(
    conn: sqlite3.Connection, workspace_id: str, endpoint_id: str, reason: str, now: int
) -> bool:
    changed = conn.execute(
        "UPDATE webhook_endpoints SET status = ?, disabledReason = ?, disabledAt = ?, "
        'updatedAt = ? WHERE "_id" = ? AND workspaceId = ? AND status = ?',
        (DISABLED, reason, now, now, endpoint_id, workspace_id, ENABLED),
    ).rowcount
    if changed:
        fail_pending(conn, workspace_id, endpoint_id, now)
    return bool(changed)


class WebhookEndpoints:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def create(
        self,
        workspace_id: str,
        url: str,
        event_types: list[str] | None,
        description: str | None,
        secret: str,
        now: dt.datetime,
        once: IdempotentWrite | None = None,
    ) -> dict:
        doc = endpoint_document(workspace_id, url, event_types, description, secret, now, once)
        doc["secrets"] = dump_secrets(doc["secrets"])
        record = {
            **endpoint_record({**doc, "disabledReason": None, "disabledAt": None}),
            "secret": secret,
        }

        def create(conn: sqlite3.Connection) -> dict:
            insert(conn, "webhook_endpoints", [doc])
            return record

        return await write_once(self.engine, once, create)

    async def list(self, workspace_id: str) -> list[dict]:
        def listing(conn: sqlite3.Connection) -> list[dict]:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM webhook_endpoints WHERE workspaceId = ? "
                'ORDER BY createdAt, "_id"',
                (workspace_id,),
            )
            return [endpoint_record(to_doc(row)) for row in rows]

        return await self.engine.read(listing)

    async def get(self, workspace_id: str, endpoint_id: str) -> dict | None:
        return await self.engine.read(_get, workspace_id, endpoint_id, quick=True)

    async def update(
        self, workspace_id: str, endpoint_id: str, changes: dict, now: dt.datetime
    ) -> dict | None:
        at = ms(now)

        def update(conn: sqlite3.Connection) -> dict | None:
            found = _get(conn, workspace_id, endpoint_id)
            if found is None:
                return None
            sets, disabling = endpoint_changes(found["status"], changes, now)
            if disabling:
                _disable(conn, workspace_id, endpoint_id, BY_REQUEST, at)
            if "eventTypes" in sets:
                sets["eventTypes"] = json.dumps(sets["eventTypes"])
            for name in ("updatedAt", "positionAt"):
                if name in sets:
                    sets[name] = at
            assignments = ", ".join(f'"{name}" = ?' for name in sets)
            conn.execute(
                f'UPDATE webhook_endpoints SET {assignments} WHERE "_id" = ? AND workspaceId = ?',
                (*sets.values(), endpoint_id, workspace_id),
            )
            return _get(conn, workspace_id, endpoint_id)

        return await self.engine.write(update)

    async def delete(self, workspace_id: str, endpoint_id: str) -> bool:
        def delete(conn: sqlite3.Connection) -> bool:
            found = conn.execute(
                'DELETE FROM webhook_endpoints WHERE "_id" = ? AND workspaceId = ?',
                (endpoint_id, workspace_id),
            ).rowcount
            for table in ("webhook_deliveries", "webhook_attempts", "webhook_leases"):
                conn.execute(
                    f"DELETE FROM {table} WHERE workspaceId = ? AND endpointId = ?",
                    (workspace_id, endpoint_id),
                )
            return bool(found)

        return await self.engine.write(delete)

    async def rotate_secret(
        self,
        workspace_id: str,
        endpoint_id: str,
        secret: str,
        now: dt.datetime,
        overlap: dt.timedelta,
        once: IdempotentWrite | None = None,
    ) -> dict | None:
        def rotate(conn: sqlite3.Connection) -> dict | None:
            row = conn.execute(
                'SELECT secrets FROM webhook_endpoints WHERE "_id" = ? AND workspaceId = ?',
                (endpoint_id, workspace_id),
            ).fetchone()
            if row is None:
                return None
            secrets = rotated(load_secrets(row[0]), secret, now, overlap)
            conn.execute(
                "UPDATE webhook_endpoints SET secrets = ?, updatedAt = ? "
                'WHERE "_id" = ? AND workspaceId = ?',
                (dump_secrets(secrets), ms(now), endpoint_id, workspace_id),
            )
            found = _get(conn, workspace_id, endpoint_id)
            return found and {**found, "secret": secret}

        if await self.get(workspace_id, endpoint_id) is None:
            return None  # a 404 stores no response
        return await write_once(self.engine, once, rotate)

    async def recover(
        self,
        workspace_id: str,
        endpoint_id: str,
        since: dt.datetime,
        now: dt.datetime,
        once: IdempotentWrite | None = None,
    ) -> bool:
        def recover(conn: sqlite3.Connection) -> bool:
            return bool(
                conn.execute(
                    "UPDATE webhook_endpoints SET generation = generation + 1, recoverAt = ?, "
                    "recoverId = '', updatedAt = ? WHERE \"_id\" = ? AND workspaceId = ?",
                    (ms(since), ms(now), endpoint_id, workspace_id),
                ).rowcount
            )

        if await self.get(workspace_id, endpoint_id) is None:
            return False  # a 404 stores no response
        return await write_once(self.engine, once, recover)

    async def disable(
        self, workspace_id: str, endpoint_id: str, reason: str, now: dt.datetime
    ) -> None:
        await self.engine.write(_disable, workspace_id, endpoint_id, reason, ms(now))

    async def claim_fanout(
        self, now: dt.datetime, lease: dt.timedelta, limit: int
    ) -> builtins.list[FanoutClaim]:
        token, until = new_id(), now + lease
        if not await self.engine.read(
            has_row,
            f"SELECT 1 {FANOUT_DUE} LIMIT 1",
            (ENABLED, ms(now)),
            snapshot=False,
            quick=True,
        ):
            return []  # an idle dispatcher waits for no write lock (another process's import)

        def claim(conn: sqlite3.Connection) -> builtins.list[FanoutClaim]:
            rows = conn.execute(
                'SELECT "_id", workspaceId, eventTypes, positionAt, positionId, recoverAt, '
                f"recoverId, generation {FANOUT_DUE} ORDER BY fanoutAt LIMIT ?",
                (ENABLED, ms(now), limit),
            ).fetchall()
            claims = []
            for row in rows:
                conn.execute(
                    'UPDATE webhook_endpoints SET fanoutAt = ?, fanoutToken = ? WHERE "_id" = ?',
                    (ms(until), token, row[0]),
                )
                recover_from = (
                    Position(instant(row[5]), row[6] or "") if row[5] is not None else None
                )
                claims.append(
                    FanoutClaim(
                        row[1],
                        row[0],
                        json.loads(row[2]) if row[2] else None,
                        Position(instant(row[3]), row[4]),
                        recover_from,
                        row[7],
                        token,
                        until,
                    )
                )
            return claims

        return await self.engine.write(claim, durable=False)

    async def advance(self, claim: FanoutClaim, position: Position) -> bool:
        def advance(conn: sqlite3.Connection) -> bool:
            return bool(
                conn.execute(
                    "UPDATE webhook_endpoints SET positionAt = ?, positionId = ? "
                    'WHERE "_id" = ? AND workspaceId = ? AND fanoutToken = ?',
                    (ms(position.value), position.id, *_held(claim)),
                ).rowcount
            )

        return await self.engine.write(advance, durable=False)

    async def advance_recovery(self, claim: FanoutClaim, recover_from: Position | None) -> bool:
        at = ms(recover_from.value) if recover_from else None
        ident = recover_from.id if recover_from else None

        def advance(conn: sqlite3.Connection) -> bool:
            return bool(
                conn.execute(
                    "UPDATE webhook_endpoints SET recoverAt = ?, recoverId = ? "
                    'WHERE "_id" = ? AND workspaceId = ? AND fanoutToken = ? AND generation = ?',
                    (at, ident, *_held(claim), claim.generation),
                ).rowcount
            )

        return await self.engine.write(advance, durable=False)

    async def release_fanout(self, claim: FanoutClaim, next_at: dt.datetime) -> None:
        def release(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE webhook_endpoints SET fanoutAt = ?, fanoutToken = NULL "
                'WHERE "_id" = ? AND workspaceId = ? AND fanoutToken = ?',
                (ms(next_at), *_held(claim)),
            )

        await self.engine.write(release, durable=False)


def _held(claim: FanoutClaim) -> tuple[str, str, str]:
    return (claim.endpoint_id, claim.workspace_id, claim.token)
