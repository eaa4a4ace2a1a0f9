"""Dialer metrics on SQLite, from counts kept per quarter hour.

Every call insert adds the call to `call_quarters` (workspace, direction, quarter hour, user) in
the same transaction, so the counts are exact. Every UTC offset and DST change in use falls on a
quarter hour, so every local midnight of store.metrics.day_starts starts a quarter hour: a report
reads the range's quarter-hour rows (an index range: a few thousand rows for 90 days, whatever
the number of calls) and adds them into days, users and totals on the reader thread. Should a
boundary ever fall inside a quarter hour, the report groups the calls themselves by exact day
(a CASE over the boundaries, on the covering index `calls_ws_metrics_dnc`).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from zoneinfo import ZoneInfo

from store.metrics import (
    CONVERSATION_SECONDS,
    COUNTS,
    QUARTER_MS,
    assemble,
    contribution,
    day_of,
    day_starts,
    quarter_of,
)
from store.sqlite.engine import Engine
from store.sqlite.schema import ms

SUMS = (
    "COUNT(*), SUM(disposition = 'connected'), "
    f"SUM(disposition = 'connected' AND durationSeconds >= {CONVERSATION_SECONDS}), "
    "SUM(meetingBooked), SUM(disposition = 'voicemail'), SUM(toNumberSuppressed IS 1), "
    "SUM(CASE WHEN disposition = 'connected' THEN durationSeconds ELSE 0 END)"
)


def quarter_sums(calls: list[dict]) -> dict[tuple, list[int]]:
    """New calls' counts per (direction, quarter hour, user): what add_to_quarters adds."""
    sums: dict[tuple, list[int]] = {}
    for call in calls:
        key = (call["direction"], quarter_of(call["createdAt"]), call["userId"] or "")
        row = sums.setdefault(key, [0] * len(COUNTS))
        for index, value in enumerate(contribution(call).values()):
            row[index] += value
    return sums


def add_to_quarters(
    conn: sqlite3.Connection, workspace_id: str, sums: dict[tuple, list[int]]
) -> None:
    """Add `quarter_sums` of new calls into `call_quarters` (inside the transaction that
    inserts them)."""
    names = ", ".join(COUNTS)
    conn.executemany(
        f"INSERT INTO call_quarters (workspaceId, direction, quarter, userId, {names}) "
        f"VALUES (?, ?, ?, ?, {', '.join('?' * len(COUNTS))}) "
        "ON CONFLICT (workspaceId, direction, quarter, userId) DO UPDATE SET "
        + ", ".join(f"{name} = {name} + excluded.{name}" for name in COUNTS),
        [(workspace_id, *key, *row) for key, row in sums.items()],
    )


def build_quarters(conn: sqlite3.Connection) -> None:
    """Build `call_quarters` from the calls, once per file (a file written before the table
    existed); a settings row remembers that it is done."""
    if conn.execute("SELECT 1 FROM settings WHERE name = 'call_quarters'").fetchone():
        return
    conn.execute("INSERT INTO settings (name, value) VALUES ('call_quarters', '1')")
    conn.execute("DELETE FROM call_quarters")
    conn.execute(
        f"INSERT INTO call_quarters (workspaceId, direction, quarter, userId, "
        f"{', '.join(COUNTS)}) SELECT workspaceId, direction, createdAt / {QUARTER_MS}, "
        f"COALESCE(userId, ''), {SUMS} FROM calls GROUP BY 1, 2, 3, 4"
    )


def aggregate(
    conn: sqlite3.Connection, workspace_id: str, bounds: list[int], user_id: str | None
) -> list[tuple]:
    """Rows (userId, day index, *COUNTS) of the outbound calls between the bounds: from the
    quarter-hour counts when every bound starts a quarter hour (the index range of a few
    thousand rows), else from the calls themselves, grouped by day."""
    if all(bound % QUARTER_MS == 0 for bound in bounds):
        quarters = [bound // QUARTER_MS for bound in bounds]
        where = "workspaceId = ? AND direction = 'outbound' AND quarter >= ? AND quarter < ?"
        params: list = [workspace_id, quarters[0], quarters[-1]]
        if user_id is not None:
            where += " AND userId = ?"
            params.append(user_id)
        rows = conn.execute(
            f"SELECT userId, quarter, {', '.join(COUNTS)} FROM call_quarters WHERE {where}", params
        )
        return [(row[0] or None, day_of(bounds, row[1] * QUARTER_MS), *row[2:]) for row in rows]
    where = "workspaceId = ? AND direction = 'outbound' AND createdAt >= ? AND createdAt < ?"
    params = [workspace_id, bounds[0], bounds[-1]]
    if user_id is not None:
        where += " AND userId = ?"
        params.append(user_id)
    cases = " ".join(
        f"WHEN createdAt < {bound} THEN {index}" for index, bound in enumerate(bounds[1:])
    )
    return [
        tuple(row)
        for row in conn.execute(
            f"SELECT userId, CASE {cases} END, {SUMS} FROM calls WHERE {where} GROUP BY 1, 2",
            params,
        )
    ]


class DialerMetrics:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def report(
        self,
        workspace_id: str,
        first: dt.date,
        last: dt.date,
        zone: ZoneInfo,
        user_id: str | None = None,
    ) -> dict:
        """The dialer-metrics result for the local days `first`..`last` (inclusive)."""
        starts = day_starts(first, last, zone)

        def figures(conn: sqlite3.Connection) -> dict:
            # On the reader thread: the event loop only gets the result.
            rows = aggregate(conn, workspace_id, [ms(s) for s in starts], user_id)
            return assemble(
                first, last, zone, user_id, starts, ((row[0], row[1], row[2:]) for row in rows)
            )

        return await self.engine.read(figures)
