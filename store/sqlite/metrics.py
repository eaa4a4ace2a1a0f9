"""Dialer metrics on SQLite: one indexed aggregate over the covering index `calls_ws_metrics`.

The query counts per user and quarter hour (every UTC offset and DST change in use falls on a
quarter hour, so every local midnight of store.metrics.day_starts starts a quarter hour); the
quarter hours are then added into days, users and totals here, which costs a few thousand rows
whatever the number of calls. Should a boundary ever fall inside a quarter hour, the query
groups by exact day instead (a CASE over the day boundaries).
"""

from __future__ import annotations

import bisect
import datetime as dt
from zoneinfo import ZoneInfo

from store.metrics import CONVERSATION_SECONDS, COUNTS, day_starts, rates, report
from store.sqlite.schema import ms

QUARTER_MS = 15 * 60 * 1000
SUMS = ("COUNT(*), SUM(disposition = 'connected'), "
        f"SUM(disposition = 'connected' AND durationSeconds >= {CONVERSATION_SECONDS}), "
        "SUM(meetingBooked), SUM(disposition = 'voicemail'), "
        "SUM(CASE WHEN disposition = 'connected' THEN durationSeconds ELSE 0 END)")


def _add(into: dict, counts: tuple) -> None:
    for name, value in zip(COUNTS, counts, strict=True):
        into[name] = into.get(name, 0) + value


def aggregate(conn, workspace_id: str, bounds: list[int], user_id: str | None) -> list[tuple]:
    """Rows (userId, day index, *COUNTS) of the outbound calls between the bounds."""
    where = "workspaceId = ? AND direction = 'outbound' AND createdAt >= ? AND createdAt < ?"
    params: list = [workspace_id, bounds[0], bounds[-1]]
    if user_id is not None:
        where += " AND userId = ?"
        params.append(user_id)
    if all(bound % QUARTER_MS == 0 for bound in bounds):
        rows = conn.execute(f"SELECT userId, createdAt / {QUARTER_MS}, {SUMS} FROM calls "
                            f"WHERE {where} GROUP BY 1, 2", params).fetchall()
        quarters = [bound // QUARTER_MS for bound in bounds]
        return [(row[0], bisect.bisect_right(quarters, row[1]) - 1, *row[2:]) for row in rows]
    cases = " ".join(f"WHEN createdAt < {bound} THEN {index}"
                     for index, bound in enumerate(bounds[1:]))
    return [tuple(row) for row in conn.execute(
        f"SELECT userId, CASE {cases} END, {SUMS} FROM calls WHERE {where} GROUP BY 1, 2",
        params)]


class DialerMetrics:
    def __init__(self, engine):
        self.engine = engine

    async def report(self, workspace_id: str, first: dt.date, last: dt.date, zone: ZoneInfo,
                     user_id: str | None = None) -> dict:
        """The dialer-metrics result for the local days `first`..`last` (inclusive)."""
        starts = day_starts(first, last, zone)
        rows = await self.engine.read(aggregate, workspace_id, [ms(s) for s in starts], user_id)
        totals: dict = {}
        users: dict[str, dict] = {}
        days: dict[int, dict] = {}
        for user, day, *counts in rows:
            _add(totals, counts)
            _add(users.setdefault(user, {}), counts)
            _add(days.setdefault(day, {}), counts)
        return report(first, last, zone, user_id, starts, rates(totals) if totals else None,
                      [(user, rates(users[user])) for user in sorted(users)],
                      {starts[day]: rates(counts) for day, counts in days.items()})
