"""Webhook deliveries and their attempts on SQLite (store.contract.WebhookDeliveries; the rules
in store/webhooks.py). A claim is one write unit: the due deliveries in `nextAttemptAt` order,
skipping endpoints that already have `per_endpoint` attempts in flight (counted from the live
leases, inside the writers' lock, so the count holds across the processes sharing the file),
and taking `ahead` more of an endpoint whose leases are all the claiming owner's (the owner is
the first part of a lease's token)."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable, Sequence

from store.clock import new_id
from store.events import StoredEvent, first_id_at, id_at
from store.paging import Position
from store.sqlite.engine import Engine
from store.sqlite.schema import has_row, instant, ms, to_doc
from store.sqlite.webhook_endpoints import load_secrets
from store.webhooks import (
    DELIVERED,
    ENABLED,
    FAILED,
    PENDING,
    Attempt,
    AttemptPage,
    Claim,
    allowance,
    attempt_page,
    delivery_id,
    lease_token,
    secrets_at,
)

INSERT = (
    'INSERT OR IGNORE INTO webhook_deliveries ("_id", workspaceId, endpointId, eventId, '
    "eventType, generation, event, state, attempts, nextAttemptAt, createdAt, updatedAt) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)"
)
# The endpoints with pending deliveries, one index seek each (a skip scan of the due index),
# with their earliest `nextAttemptAt`: a claim never walks a backlog it cannot take.
ENDPOINTS_DUE = (
    "WITH RECURSIVE pending(endpointId) AS ("
    "SELECT (SELECT endpointId FROM webhook_deliveries WHERE state = ?1 "
    "ORDER BY endpointId LIMIT 1) "
    "UNION ALL SELECT (SELECT endpointId FROM webhook_deliveries WHERE state = ?1 "
    "AND endpointId > pending.endpointId ORDER BY endpointId LIMIT 1) "
    "FROM pending WHERE pending.endpointId IS NOT NULL) "
    "SELECT endpointId, due FROM (SELECT endpointId, (SELECT min(nextAttemptAt) "
    "FROM webhook_deliveries WHERE state = ?1 AND endpointId = pending.endpointId) AS due "
    "FROM pending WHERE endpointId IS NOT NULL) WHERE due <= ?2 ORDER BY due, endpointId"
)
DUE = (
    'SELECT "_id", workspaceId, eventId, eventType, event, attempts FROM webhook_deliveries '
    "WHERE state = ? AND endpointId = ? AND nextAttemptAt <= ? AND workspaceId = ? "
    "ORDER BY nextAttemptAt LIMIT ?"
)
# The endpoint's live leases, and how many of them are the claiming owner's.
IN_FLIGHT = (
    "SELECT count(*), count(CASE WHEN substr(leaseToken, 1, ?) = ? THEN 1 END) "
    "FROM webhook_deliveries WHERE workspaceId = ? AND endpointId = ? AND state = ? "
    "AND leaseUntil > ?"
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

        return await self.engine.write(add, durable=False) if rows else 0

    async def claim(
        self,
        now: dt.datetime,
        lease: dt.timedelta,
        limit: int,
        per_endpoint: int,
        finished: Sequence[tuple[Claim, Attempt]] = (),
        *,
        owner: str | None = None,
        ahead: int = 0,
    ) -> list[Claim]:
        token, until = lease_token(owner, new_id()), now + lease
        at, end = ms(now), ms(until)
        record = _finished(finished) if finished else None
        mine = (len(owner) + 1, f"{owner}.") if owner else (0, "-")  # '-': no token matches
        # An endpoint with a delivery due (what the claim would take or fail), else no claim.
        if record is None and not await self.engine.read(
            has_row, ENDPOINTS_DUE, (PENDING, at), snapshot=False, quick=True
        ):
            return []  # an idle dispatcher waits for no write lock (another process's import)

        def claim(conn: sqlite3.Connection) -> list[Claim]:
            if record is not None:  # first: the slots they held are free for this claim
                record(conn)
            claims: list[Claim] = []
            later: list[tuple[str, sqlite3.Row, int]] = []

            def take(endpoint_id: str, found: sqlite3.Row, count: int) -> None:
                workspace = found["workspaceId"]
                taken = conn.execute(DUE, (PENDING, endpoint_id, at, workspace, count)).fetchall()
                conn.executemany(
                    "UPDATE webhook_deliveries SET attempts = attempts + 1, leaseToken = ?, "
                    'leaseUntil = ?, nextAttemptAt = ?, updatedAt = ? WHERE "_id" = ?',
                    [(token, end, end, at, row[0]) for row in taken],
                )
                url, failing_since = found["url"], instant(found["failingSince"])
                signing = secrets_at(load_secrets(found["secrets"]), now)
                claims.extend(
                    Claim(
                        row[0],
                        workspace,
                        endpoint_id,
                        row[2],
                        row[3],
                        row[4],
                        row[5] + 1,
                        url,
                        signing,
                        failing_since,
                        token,
                        until,
                    )
                    for row in taken
                )

            # Endpoints in the order of their earliest due delivery; each gets its free slots,
            # then, while the limit allows, what it may take ahead.
            for endpoint_id, _ in conn.execute(ENDPOINTS_DUE, (PENDING, at)).fetchall():
                if len(claims) >= limit:
                    break
                found = conn.execute(
                    "SELECT workspaceId, url, secrets, status, failingSince FROM webhook_endpoints "
                    'WHERE "_id" = ?',
                    (endpoint_id,),
                ).fetchone()
                if found is None or found["status"] != ENABLED:
                    # Its endpoint is gone or disabled: nothing will be sent.
                    conn.execute(
                        "UPDATE webhook_deliveries SET state = ?, nextAttemptAt = NULL, "
                        "updatedAt = ? WHERE state = ? AND endpointId = ? AND nextAttemptAt <= ?",
                        (FAILED, at, PENDING, endpoint_id, at),
                    )
                    continue
                flying, own = conn.execute(
                    IN_FLIGHT, (*mine, found["workspaceId"], endpoint_id, PENDING, at)
                ).fetchone()
                first, extra = allowance(per_endpoint, ahead, own, flying - own)
                if first > 0:  # else its slots are taken (here or in another process)
                    take(endpoint_id, found, min(first, limit - len(claims)))
                if extra > 0:
                    later.append((endpoint_id, found, extra))
            for endpoint_id, found, extra in later:
                if len(claims) >= limit:
                    break
                take(endpoint_id, found, min(extra, limit - len(claims)))
            return claims

        return await self.engine.write(claim, durable=False)

    async def release(self, claims: Sequence[Claim], now: dt.datetime) -> None:
        if not claims:
            return
        at = ms(now)
        rows = [(at, at, claim.delivery_id, claim.token, PENDING) for claim in claims]

        def release(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "UPDATE webhook_deliveries SET attempts = attempts - 1, leaseToken = NULL, "
                'leaseUntil = NULL, nextAttemptAt = ?, updatedAt = ? WHERE "_id" = ? '
                "AND leaseToken = ? AND state = ?",
                rows,
            )

        await self.engine.write(release, durable=False)

    async def finish(self, results: Sequence[tuple[Claim, Attempt]]) -> None:
        if results:
            await self.engine.write(_finished(results), durable=False)

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
        return attempt_page(docs, page_size)

    async def backlog(self) -> int:
        """Counted on the (state, endpointId, nextAttemptAt) index, without reading a row."""

        def count(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT count(*) FROM webhook_deliveries WHERE state = ?", (PENDING,)
            ).fetchone()
            return int(row[0])

        return await self.engine.read(count, snapshot=False)

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
            found = await self.engine.write(delete, durable=False)
            deleted += found
            if found < batch:
                break
        return deleted


def _finished(results: Sequence[tuple[Claim, Attempt]]) -> Callable[[sqlite3.Connection], None]:
    """The write that records `results` (the attempts, and each delivery's state where its
    lease still holds, and the endpoints' failingSince)."""
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

    return finish
