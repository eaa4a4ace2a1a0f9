"""Erasure requests on SQLite (store.contract.erasures; the rules in store/erasures.py): the
request path, and the worker's claims, each a conditional update under the writers' lock
(BEGIN IMMEDIATE), so two processes sharing the file never hold one request at once."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

from store.erasures import (
    CANDIDATES,
    COMPLETED,
    COUNTS,
    LEASE,
    OPEN,
    PENDING,
    RUNNING,
    ErasureClaim,
    claim_of,
    completed_event,
    erasure_document,
    record,
    takeable,
)
from store.idempotency import IdempotentWrite
from store.paging import Page, Window
from store.sqlite.engine import Engine
from store.sqlite.erasing import erase_unit
from store.sqlite.events import EventWriter
from store.sqlite.idempotency import write_once
from store.sqlite.matching import marks
from store.sqlite.paging import page_query
from store.sqlite.schema import has_row, insert, ms, to_doc

FIELDS = '"_id", status, requestedAt, completedAt, reason, counts'
# The open requests due at an instant: what claim takes from, and what its look before the write
# lock asks for, in one place so the two never differ.
OPEN_DUE = "FROM erasures WHERE status IN (?, ?) AND nextAttemptAt <= ?"


def _get(conn: sqlite3.Connection, workspace_id: str, erasure_id: str) -> dict | None:
    row = conn.execute(
        f'SELECT {FIELDS} FROM erasures WHERE "_id" = ? AND workspaceId = ?',
        (erasure_id, workspace_id),
    ).fetchone()
    return record(to_doc(row)) if row else None


def _held(conn: sqlite3.Connection, claim: ErasureClaim) -> dict | None:
    """The claimed request's document while the claim holds its lease."""
    row = conn.execute(
        'SELECT * FROM erasures WHERE "_id" = ? AND workspaceId = ? AND leaseToken = ?',
        (claim.id, claim.workspace_id, claim.token),
    ).fetchone()
    return to_doc(row) if row else None


def _save(conn: sqlite3.Connection, doc: dict, names: tuple[str, ...]) -> None:
    sets = ", ".join(f'"{name}" = ?' for name in names)
    values = [
        json.dumps(doc[name]) if isinstance(doc[name], dict | list) else doc[name] for name in names
    ]
    values = [ms(v) if isinstance(v, dt.datetime) else v for v in values]
    conn.execute(
        f'UPDATE erasures SET {sets} WHERE "_id" = ? AND workspaceId = ?',
        (*values, doc["_id"], doc["workspaceId"]),
    )


class Erasures:
    def __init__(self, engine: Engine, events: EventWriter) -> None:
        self.engine = engine
        self.events = events
        self.engine_now = events.now  # the store's clock

    async def create(
        self,
        workspace_id: str,
        hashes: dict[str, str],
        prospect_ids: list[str],
        now: dt.datetime,
        once: IdempotentWrite | None = None,
    ) -> dict:
        doc = erasure_document(workspace_id, hashes, prospect_ids, now, once)

        def create(conn: sqlite3.Connection) -> dict:
            insert(conn, "erasures", [doc])
            return record(doc)

        return await write_once(self.engine, once, create)

    async def get(self, workspace_id: str, erasure_id: str) -> dict | None:
        return await self.engine.read(_get, workspace_id, erasure_id, quick=True)

    async def page(self, workspace_id: str, window: Window) -> Page:
        def page_of(conn: sqlite3.Connection) -> Page:
            return page_query(
                conn,
                fields=FIELDS,
                source="erasures",
                where=["workspaceId = ?"],
                params=[workspace_id],
                window=window,
                order=("requestedAt", '"_id"'),
                record=record,
            )

        return await self.engine.read(page_of, quick=True)

    async def claim(self, now: dt.datetime, token: str) -> ErasureClaim | None:
        if not await self.engine.read(
            has_row, f"SELECT 1 {OPEN_DUE} LIMIT 1", (*OPEN, ms(now)), snapshot=False, quick=True
        ):
            return None  # an idle worker waits for no write lock (another process's import)

        def take(conn: sqlite3.Connection) -> ErasureClaim | None:
            rows = conn.execute(
                f"SELECT * {OPEN_DUE} ORDER BY nextAttemptAt LIMIT ?",
                (*OPEN, ms(now), CANDIDATES),
            ).fetchall()
            doc = next((d for d in map(to_doc, rows) if takeable(d, now)), None)
            if doc is None:
                return None
            until = now + LEASE
            conn.execute(
                'UPDATE erasures SET status = ?, leaseToken = ?, leaseUntil = ? WHERE "_id" = ?',
                (RUNNING, token, ms(until), doc["_id"]),
            )
            return claim_of(doc, token, until)

        return await self.engine.write(take)

    async def erase_prospect(self, claim: ErasureClaim, prospect_id: str) -> list[str] | None:
        return await self.engine.write(erase_unit, claim, prospect_id, self.events)

    async def progress(
        self, claim: ErasureClaim, confirmed: list[str], counts: dict[str, int]
    ) -> bool:
        def step(conn: sqlite3.Connection) -> bool:
            doc = _held(conn, claim)
            if doc is None:
                return False
            for name, added in counts.items():
                doc["counts"][name] = doc["counts"].get(name, 0) + added
            doc["recordings"] = [r for r in doc["recordings"] if r not in set(confirmed)]
            doc["leaseUntil"] = self.engine_now() + LEASE  # each step renews the lease
            _save(conn, doc, ("counts", "recordings", "leaseUntil"))
            return True

        return await self.engine.write(step)

    async def retry_later(self, claim: ErasureClaim, at: dt.datetime) -> bool:
        def later(conn: sqlite3.Connection) -> bool:
            return bool(
                conn.execute(
                    "UPDATE erasures SET attempts = attempts + 1, nextAttemptAt = ?, "
                    'leaseToken = NULL, leaseUntil = NULL WHERE "_id" = ? AND leaseToken = ?',
                    (ms(at), claim.id, claim.token),
                ).rowcount
            )

        return await self.engine.write(later)

    async def finish(
        self, claim: ErasureClaim, status: str, now: dt.datetime, reason: str | None = None
    ) -> dict | None:
        def end(conn: sqlite3.Connection) -> dict | None:
            doc = _held(conn, claim)
            if doc is None:
                return None
            doc |= {
                "status": status,
                "completedAt": now,
                "reason": reason,
                "nextAttemptAt": None,
                "leaseToken": None,
                "leaseUntil": None,
            }
            _save(
                conn,
                doc,
                ("status", "completedAt", "reason", "nextAttemptAt", "leaseToken", "leaseUntil"),
            )
            if status == COMPLETED:
                self.events.record(conn, claim.workspace_id, [], [completed_event(doc, now)])
            return doc

        return await self.engine.write(end)

    async def reopen_undone(self, now: dt.datetime) -> int:
        def reopen(conn: sqlite3.Connection) -> int:
            rows = conn.execute(
                'SELECT "_id", workspaceId, prospectIds, callIds FROM erasures WHERE status = ?',
                (COMPLETED,),
            ).fetchall()
            again = 0
            for row in map(to_doc, rows):
                ids, calls = row["prospectIds"], row["callIds"]
                ws = row["workspaceId"]
                live = (
                    ids
                    and conn.execute(
                        "SELECT 1 FROM prospects WHERE workspaceId = ? "
                        f'AND "_id" IN ({marks(ids)}) AND deletedAt IS NULL LIMIT 1',
                        (ws, *ids),
                    ).fetchone()
                )
                unerased = (
                    calls
                    and conn.execute(
                        f'SELECT 1 FROM calls WHERE workspaceId = ? AND "_id" IN ({marks(calls)}) '
                        "AND erasedAt IS NULL LIMIT 1",
                        (ws, *calls),
                    ).fetchone()
                )
                if live or unerased:
                    conn.execute(
                        "UPDATE erasures SET status = ?, completedAt = NULL, done = '[]', "
                        "counts = ?, nextAttemptAt = ?, attempts = 0, leaseToken = NULL, "
                        'leaseUntil = NULL WHERE "_id" = ?',
                        (PENDING, json.dumps(dict.fromkeys(COUNTS, 0)), ms(now), row["_id"]),
                    )
                    again += 1
            return again

        return await self.engine.write(reopen)

    async def open_count(self) -> int:
        def count(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "SELECT count(*) FROM erasures WHERE status IN (?, ?)", OPEN
            ).fetchone()[0]

        return await self.engine.read(count)
