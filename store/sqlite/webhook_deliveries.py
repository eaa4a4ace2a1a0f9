"""Webhook deliveries and their attempts on SQLite (store.contract.WebhookDeliveries; the rules
in store/webhooks.py).

A claim is one write unit: the due deliveries in `nextAttemptAt` order, skipping endpoints that
already have `per_endpoint` attempts in flight (counted from the live leases, inside the writers'
lock, so the count holds across the processes sharing the file), and taking `ahead` more of an
endpoint whose leases are all the claiming owner's (the owner is the first part of a lease's
token).

A claim writes no delivery row: its lease is one row of `webhook_leases` per endpoint it took
deliveries of (its token, its end, the ids it holds), which the outcomes and releases shrink and
finally delete. A leased delivery keeps its `nextAttemptAt` (it was due): a claim skips the ids
of the endpoint's live leases, and a lease that ended with its process dead is deleted by the
endpoint's next claim, which counts its attempts (each may have been sent) and finds their
deliveries due again. An outcome is recorded only while its lease row is there (an attempt that
outlived its lease, whose deliveries another claim took, changes no delivery), and sets the
delivery's state, attempt count and next attempt in one update. So a delivery's row is written
when it is added and when an attempt ends, never for a claim, and the due index holds pending
deliveries only (schema.PENDING_ONLY): adding puts a delivery in, an outcome takes it out or
moves it to its next attempt.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Callable, Sequence

from store.clock import new_id
from store.events import StoredEvent, first_id_at, id_at
from store.paging import Position
from store.sqlite.engine import Engine
from store.sqlite.schema import PENDING_ONLY, instant, ms, to_doc
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
    f"SELECT (SELECT endpointId FROM webhook_deliveries WHERE {PENDING_ONLY} "
    "ORDER BY endpointId LIMIT 1) "
    f"UNION ALL SELECT (SELECT endpointId FROM webhook_deliveries WHERE {PENDING_ONLY} "
    "AND endpointId > pending.endpointId ORDER BY endpointId LIMIT 1) "
    "FROM pending WHERE pending.endpointId IS NOT NULL) "
    "SELECT endpointId, due FROM (SELECT endpointId, (SELECT min(nextAttemptAt) "
    f"FROM webhook_deliveries WHERE {PENDING_ONLY} AND endpointId = pending.endpointId) AS due "
    "FROM pending WHERE endpointId IS NOT NULL) WHERE due <= ? ORDER BY due, endpointId"
)
DUE = (
    'SELECT "_id", workspaceId, eventId, eventType, event, attempts FROM webhook_deliveries '
    f"WHERE {PENDING_ONLY} AND endpointId = ? AND nextAttemptAt <= ? AND workspaceId = ? "
    "ORDER BY nextAttemptAt LIMIT ?"
)
ENDPOINT = (
    'SELECT workspaceId, url, secrets, status, failingSince FROM webhook_endpoints WHERE "_id" = ?'
)
LEASES = (
    "SELECT token, deliveries FROM webhook_leases WHERE workspaceId = ? AND endpointId = ? "
    "AND until > ?"
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
        mine = f"{owner}." if owner else None
        # A delivery due that no live lease holds (what the claim would take or fail), else no
        # claim: an idle dispatcher waits for no write lock (another process's import).
        if record is None and not await self.engine.read(
            _claimable, at, snapshot=False, quick=True
        ):
            return []

        def claim(conn: sqlite3.Connection) -> list[Claim]:
            if record is not None:  # first: the slots they held are free for this claim
                record(conn)
            claims: list[Claim] = []
            later: list[tuple[str, sqlite3.Row, int]] = []
            held: dict[str, set[str]] = {}  # per endpoint: the ids its live leases hold
            taken: dict[str, tuple[str, list[str]]] = {}  # per endpoint: (workspace, ids taken)

            def take(endpoint_id: str, found: sqlite3.Row, count: int) -> None:
                workspace, skip = found["workspaceId"], held[endpoint_id]
                rows = conn.execute(DUE, (endpoint_id, at, workspace, count + len(skip))).fetchall()
                rows = [row for row in rows if row[0] not in skip][:count]
                ids = [row[0] for row in rows]
                skip.update(ids)
                taken.setdefault(endpoint_id, (workspace, []))[1].extend(ids)
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
                    for row in rows
                )

            # Endpoints in the order of their earliest due delivery; each gets its free slots,
            # then, while the limit allows, what it may take ahead.
            for endpoint_id, _ in conn.execute(ENDPOINTS_DUE, (at,)).fetchall():
                if len(claims) >= limit:
                    break
                found = conn.execute(ENDPOINT, (endpoint_id,)).fetchone()
                if found is None or found["status"] != ENABLED:
                    # Its endpoint is gone or disabled: nothing will be sent.
                    conn.execute(
                        "UPDATE webhook_deliveries SET state = ?, nextAttemptAt = NULL, "
                        f"updatedAt = ? WHERE {PENDING_ONLY} AND endpointId = ? "
                        "AND nextAttemptAt <= ?",
                        (FAILED, at, endpoint_id, at),
                    )
                    continue
                workspace = found["workspaceId"]
                # The leases that ended (their process died mid-attempt) hold nothing now; their
                # attempts are counted (each may have been sent).
                for (ended,) in conn.execute(
                    "DELETE FROM webhook_leases WHERE workspaceId = ? AND endpointId = ? "
                    "AND until <= ? RETURNING deliveries",
                    (workspace, endpoint_id, at),
                ).fetchall():
                    conn.executemany(
                        "UPDATE webhook_deliveries SET attempts = attempts + 1 "
                        'WHERE "_id" = ? AND state = ?',
                        [(i, PENDING) for i in json.loads(ended)],
                    )
                skip, own = _leased(conn, workspace, endpoint_id, at, mine)
                held[endpoint_id] = skip
                first, extra = allowance(per_endpoint, ahead, own, len(skip) - own)
                if first > 0:  # else its slots are taken (here or in another process)
                    take(endpoint_id, found, min(first, limit - len(claims)))
                if extra > 0:
                    later.append((endpoint_id, found, extra))
            for endpoint_id, found, extra in later:
                if len(claims) >= limit:
                    break
                take(endpoint_id, found, min(extra, limit - len(claims)))
            conn.executemany(
                "INSERT INTO webhook_leases (workspaceId, endpointId, token, until, deliveries) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (workspace, endpoint_id, token, end, json.dumps(ids))
                    for endpoint_id, (workspace, ids) in taken.items()
                    if ids
                ],
            )
            return claims

        return await self.engine.write(claim, durable=False)

    async def release(self, claims: Sequence[Claim], now: dt.datetime) -> None:
        """Their deliveries leave their leases (they were due, and stay so)."""
        if claims:
            await self.engine.write(_ending(claims), durable=False)

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
        """Counted on the due index (pending deliveries only), without reading a row."""

        def count(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                f"SELECT count(*) FROM webhook_deliveries WHERE {PENDING_ONLY}"
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
                    "webhook_deliveries WHERE state != 'pending' AND state = ? "
                    "AND updatedAt < ? LIMIT ?)",
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


def _claimable(conn: sqlite3.Connection, at: int) -> bool:
    """Whether an endpoint has a delivery due at `at` that no live lease holds, or is gone or
    disabled with deliveries due (which a claim fails)."""
    for endpoint_id, _ in conn.execute(ENDPOINTS_DUE, (at,)).fetchall():
        found = conn.execute(ENDPOINT, (endpoint_id,)).fetchone()
        if found is None or found["status"] != ENABLED:
            return True
        held = len(_leased(conn, found["workspaceId"], endpoint_id, at)[0])
        # The leased deliveries are due (a lease keeps `nextAttemptAt`): one more due is free.
        due = conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE {PENDING_ONLY} "
            "AND endpointId = ? AND nextAttemptAt <= ? LIMIT ?)",
            (endpoint_id, at, held + 1),
        ).fetchone()[0]
        if due > held:
            return True
    return False


def _leased(
    conn: sqlite3.Connection, workspace: str, endpoint_id: str, at: int, mine: str | None = None
) -> tuple[set[str], int]:
    """The ids the endpoint's live leases hold at `at` (each delivery is in one lease at most),
    and how many of them are in leases whose token starts with `mine` (the claiming owner's)."""
    held: set[str] = set()
    own = 0
    for token, ids in conn.execute(LEASES, (workspace, endpoint_id, at)):
        holding = json.loads(ids)
        held.update(holding)
        if mine is not None and token.startswith(mine):
            own += len(holding)
    return held, own


def _ending(
    claims: Sequence[Claim],
    ended: Callable[[sqlite3.Connection, list[Claim]], None] | None = None,
) -> Callable[[sqlite3.Connection], None]:
    """The write that takes `claims` out of their leases (a lease left holding nothing is
    deleted) and then calls `ended` with those whose lease was still there (an attempt that
    outlived its lease, whose deliveries another claim took, has none)."""
    by_lease: dict[tuple[str, str, str], dict[str, Claim]] = {}
    for claim in claims:
        key = (claim.workspace_id, claim.endpoint_id, claim.token)
        by_lease.setdefault(key, {})[claim.delivery_id] = claim

    def end(conn: sqlite3.Connection) -> None:
        current: list[Claim] = []
        for (workspace, endpoint_id, token), ending in by_lease.items():
            found = conn.execute(
                "SELECT deliveries FROM webhook_leases WHERE workspaceId = ? AND endpointId = ? "
                "AND token = ?",
                (workspace, endpoint_id, token),
            ).fetchone()
            if found is None:
                continue
            holding = json.loads(found[0])
            current.extend(ending[i] for i in holding if i in ending)
            left = [i for i in holding if i not in ending]
            if left:
                conn.execute(
                    "UPDATE webhook_leases SET deliveries = ? WHERE workspaceId = ? "
                    "AND endpointId = ? AND token = ?",
                    (json.dumps(left), workspace, endpoint_id, token),
                )
            else:
                conn.execute(
                    "DELETE FROM webhook_leases WHERE workspaceId = ? AND endpointId = ? "
                    "AND token = ?",
                    (workspace, endpoint_id, token),
                )
        if ended is not None:
            ended(conn, current)

    return end


def _finished(results: Sequence[tuple[Claim, Attempt]]) -> Callable[[sqlite3.Connection], None]:
    """The write that records `results` (the attempts, and each delivery's state where its
    lease is still there, and the endpoints' failingSince)."""
    rows, updates, endpoints = [], {}, {}
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
        updates[claim.delivery_id] = (state, claim.attempt, next_at, at, claim.delivery_id, PENDING)
        # The endpoint's latest outcome in this batch decides its failingSince.
        endpoints[(claim.endpoint_id, claim.workspace_id)] = (attempt.delivered, at)

    def ended(conn: sqlite3.Connection, current: list[Claim]) -> None:
        conn.executemany(
            "UPDATE webhook_deliveries SET state = ?, attempts = ?, nextAttemptAt = ?, "
            'updatedAt = ? WHERE "_id" = ? AND state = ?',
            [updates[claim.delivery_id] for claim in current],
        )

    leases = _ending([claim for claim, _ in results], ended)

    def finish(conn: sqlite3.Connection) -> None:
        conn.executemany(
            f"INSERT INTO webhook_attempts ({ATTEMPT_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        leases(conn)  # the deliveries' outcomes, where their leases are still there
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
