"""Webhook deliveries and their attempts on SQLite (store.contract.WebhookDeliveries; the rules
in store/webhooks.py). A claim is one write unit: the due deliveries in `nextAttemptAt` order,
skipping endpoints that already have `per_endpoint` attempts in flight (counted from the live
leases, inside the writers' lock, so the count holds across the processes sharing the file)."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Sequence

from store.clock import new_id
from store.events import StoredEvent, first_id_at, id_at
from store.paging import Position
from store.sqlite.engine import Engine
from store.sqlite.schema import instant, ms, to_doc
from store.sqlite.webhook_endpoints import load_secrets
from store.webhooks import (
    DELIVERED,
    ENABLED,
    FAILED,
    PENDING,
    Attempt,
    AttemptPage,
    Claim,
    attempt_record,
    delivery_id,
    secrets_at,
)

INSERT = (
    'INSERT OR IGNORE INTO webhook_deliveries ("_id", workspaceId, endpointId, eventId, '
    "eventType, generation, event, state, attempts, nextAttemptAt, createdAt, updatedAt) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)"
)
DUE = (
    'SELECT "_id", workspaceId, endpointId, eventId, eventType, event, attempts, nextAttemptAt '
    "FROM webhook_deliveries WHERE state = ? AND nextAttemptAt <= ? SKIP"
    "ORDER BY nextAttemptAt LIMIT ?"
)
IN_FLIGHT = (
    "SELECT count(*) FROM webhook_deliveries WHERE workspaceId = ? AND endpointId = ? "
    "AND state = ? AND leaseUntil > ?"
)
ATTEMPT_COLUMNS = (
    '"_id", workspaceId, endpointId, deliveryId, eventId, eventType, attempt, at, statusCode, '
    "durationMs, error, nextAttemptAt"
)


class WebhookDeliveries:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def add(
        self,
        workspace_id: str,
        endpoint_id: str,
        generation: int,
        events: Sequence[StoredEvent],
        now: dt.datetime,
    ) -> int:
        at = ms(now)
        rows = [
            (
                delivery_id(endpoint_id, event.id, generation),
                workspace_id,
                endpoint_id,
                event.id,
                event.type,
                generation,
                event.text,
                PENDING,
                at,
                at,
                at,
            )
            for event in events
        ]

        def add(conn: sqlite3.Connection) -> int:
            before = conn.total_changes
            conn.executemany(INSERT, rows)
            return conn.total_changes - before

        return await self.engine.write(add) if rows else 0

    async def claim(
        self, now: dt.datetime, lease: dt.timedelta, limit: int, per_endpoint: int
    ) -> list[Claim]:
        token, until = new_id(), now + lease
        at, end = ms(now), ms(until)

        def claim(conn: sqlite3.Connection) -> list[Claim]:
            claims: list[Claim] = []
            endpoints: dict[str, dict | None] = {}
            flying: dict[str, int] = {}
            full: list[str] = []  # endpoints with `per_endpoint` in flight: skipped
            while len(claims) < limit:
                skip = f"AND endpointId NOT IN ({','.join('?' * len(full))}) " if full else ""
                rows = conn.execute(
                    DUE.replace("SKIP", skip), (PENDING, at, *full, limit - len(claims))
                ).fetchall()
                if not rows:
                    break
                for row in rows:
                    ident, workspace, endpoint_id = row[0], row[1], row[2]
                    if endpoint_id in full:
                        continue
                    if endpoint_id not in endpoints:
                        found = conn.execute(
                            "SELECT url, secrets, status, failingSince FROM webhook_endpoints "
                            'WHERE "_id" = ? AND workspaceId = ?',
                            (endpoint_id, workspace),
                        ).fetchone()
                        endpoints[endpoint_id] = dict(found) if found else None
                        flying[endpoint_id] = conn.execute(
                            IN_FLIGHT, (workspace, endpoint_id, PENDING, at)
                        ).fetchone()[0]
                    endpoint = endpoints[endpoint_id]
                    if endpoint is None or endpoint["status"] != ENABLED:
                        # Its endpoint is gone or disabled: nothing will be sent.
                        conn.execute(
                            "UPDATE webhook_deliveries SET state = ?, nextAttemptAt = NULL, "
                            'updatedAt = ? WHERE "_id" = ?',
                            (FAILED, at, ident),
                        )
                        continue
                    if flying[endpoint_id] >= per_endpoint:
                        full.append(endpoint_id)
                        continue
                    conn.execute(
                        "UPDATE webhook_deliveries SET attempts = attempts + 1, leaseToken = ?, "
                        'leaseUntil = ?, nextAttemptAt = ?, updatedAt = ? WHERE "_id" = ?',
                        (token, end, end, at, ident),
                    )
                    flying[endpoint_id] += 1
                    claims.append(
                        Claim(
                            ident,
                            workspace,
                            endpoint_id,
                            row[3],
                            row[4],
                            row[5],
                            row[6] + 1,
                            endpoint["url"],
                            secrets_at(load_secrets(endpoint["secrets"]), now),
                            instant(endpoint["failingSince"]),
                            token,
                            until,
                        )
                    )
                    if len(claims) >= limit:
                        break
            return claims

        return await self.engine.write(claim)

    async def finish(self, results: Sequence[tuple[Claim, Attempt]]) -> None:
        rows, updates, endpoints = [], [], {}
        for claim, attempt in results:
            at, next_at = ms(attempt.at), ms(attempt.next_attempt_at)
            if attempt.delivered:
                state = DELIVERED
            else:
                state = PENDING if attempt.next_attempt_at is not None else FAILED
            rows.append(
                (
                    id_at(attempt.at),
                    claim.workspace_id,
                    claim.endpoint_id,
                    claim.delivery_id,
                    claim.event_id,
                    claim.event_type,
                    claim.attempt,
                    at,
                    attempt.status_code,
                    attempt.duration_ms,
                    attempt.error,
                    next_at,
                )
            )
            updates.append((state, next_at, at, claim.delivery_id, claim.token, PENDING))
            # The endpoint's latest outcome in this batch decides its failingSince.
            endpoints[(claim.endpoint_id, claim.workspace_id)] = (attempt.delivered, at)

        def finish(conn: sqlite3.Connection) -> None:
            conn.executemany(
                f"INSERT INTO webhook_attempts ({ATTEMPT_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            # Only while the lease holds: an attempt that outlived it was taken over.
            conn.executemany(
                "UPDATE webhook_deliveries SET state = ?, nextAttemptAt = ?, leaseToken = NULL, "
                'leaseUntil = NULL, updatedAt = ? WHERE "_id" = ? AND leaseToken = ? '
                "AND state = ?",
                updates,
            )
            for (endpoint_id, workspace_id), (delivered, at) in endpoints.items():
                if delivered:
                    conn.execute(
                        "UPDATE webhook_endpoints SET failingSince = NULL "
                        'WHERE "_id" = ? AND workspaceId = ? AND failingSince IS NOT NULL',
                        (endpoint_id, workspace_id),
                    )
                else:
                    conn.execute(
                        "UPDATE webhook_endpoints SET failingSince = ? "
                        'WHERE "_id" = ? AND workspaceId = ? AND failingSince IS NULL',
                        (at, endpoint_id, workspace_id),
                    )

        if rows:
            await self.engine.write(finish)

    async def page(
        self, workspace_id: str, endpoint_id: str, after: Position | None, page_size: int
    ) -> AttemptPage:
        def page(conn: sqlite3.Connection) -> list[dict]:
            keyset: str = ""
            params: tuple = ()
            if after is not None:
                keyset, params = 'AND (at, "_id") < (?, ?) ', (ms(after.value), after.id)
            rows = conn.execute(
                f"SELECT {ATTEMPT_COLUMNS} FROM webhook_attempts WHERE workspaceId = ? "
                f'AND endpointId = ? {keyset}ORDER BY at DESC, "_id" DESC LIMIT ?',
                (workspace_id, endpoint_id, *params, page_size + 1),
            )
            return [to_doc(row) for row in rows]

        docs = await self.engine.read(page, quick=True)
        shown = docs[:page_size]
        last = Position(shown[-1]["at"], shown[-1]["_id"]) if shown else None
        return AttemptPage([attempt_record(doc) for doc in shown], len(docs) > page_size, last)

    async def delete_expired(
        self, before: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Attempts by the table's own order (rowid: written as their instants go), finished
        deliveries by the (state, updatedAt) index; `batch` rows per write unit."""
        cutoff, oldest_id = ms(before), first_id_at(before)

        def delete(conn: sqlite3.Connection) -> int:
            gone = conn.execute(
                "DELETE FROM webhook_attempts WHERE rowid IN (SELECT rowid FROM (SELECT rowid, "
                '"_id" FROM webhook_attempts ORDER BY rowid LIMIT ?) WHERE "_id" < ?)',
                (batch, oldest_id),
            ).rowcount
            for state in (DELIVERED, FAILED):
                gone += conn.execute(
                    "DELETE FROM webhook_deliveries WHERE rowid IN (SELECT rowid FROM "
                    "webhook_deliveries WHERE state = ? AND updatedAt < ? LIMIT ?)",
                    (state, cutoff, batch),
                ).rowcount
            return gone

        deleted = 0
        for _ in range(max_batches):
            found = await self.engine.write(delete)
            deleted += found
            if found < batch:
                break
        return deleted
