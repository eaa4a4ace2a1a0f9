"""Dialer metrics on MongoDB: the counts of totals, byUser and byDay in one aggregation
pipeline (`$facet`, with `$bucket` on the local-midnight boundaries of
store.metrics.day_starts); the rates are computed from them by store.metrics.rates, as on
SQLite."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from pymongo.asynchronous.database import AsyncDatabase

from store.metrics import CONVERSATION_SECONDS, COUNTS, day_starts, rates, report
from store.mongo.errors import translate_errors


def _is(field: str, value: object) -> dict:
    return {"$eq": [f"${field}", value]}


def _count_if(condition: dict) -> dict:
    return {"$sum": {"$cond": [condition, 1, 0]}}


CONNECTED = _is("disposition", "connected")
ACCUMULATORS = {
    "dials": {"$sum": 1},
    "connects": _count_if(CONNECTED),
    "conversations": _count_if(
        {"$and": [CONNECTED, {"$gte": ["$durationSeconds", CONVERSATION_SECONDS]}]}
    ),
    "meetingsBooked": _count_if(_is("meetingBooked", True)),
    "voicemails": _count_if(_is("disposition", "voicemail")),
    "talkTimeSeconds": {"$sum": {"$cond": [CONNECTED, "$durationSeconds", 0]}},
}


def pipeline(workspace_id: str, starts: list[dt.datetime], user_id: str | None) -> list[dict]:
    """Totals, byUser and byDay in one pass over the range's outbound calls."""
    match = {
        "workspaceId": workspace_id,
        "direction": "outbound",
        "createdAt": {"$gte": starts[0], "$lt": starts[-1]},
    }
    if user_id is not None:
        match["userId"] = user_id
    return [
        {"$match": match},
        {
            "$facet": {
                "totals": [{"$group": {"_id": None, **ACCUMULATORS}}],
                "byUser": [{"$group": {"_id": "$userId", **ACCUMULATORS}}, {"$sort": {"_id": 1}}],
                "byDay": [
                    {
                        "$bucket": {
                            "groupBy": "$createdAt",
                            "boundaries": starts,
                            "output": ACCUMULATORS,
                        }
                    }
                ],
            }
        },
    ]


def _figures(row: dict) -> dict:
    """The published figures of a row of counts (the rates are store.metrics' definitions)."""
    return rates({name: row[name] for name in COUNTS})


@translate_errors
class DialerMetrics:
    def __init__(self, db: AsyncDatabase) -> None:
        self.col = db["calls"]

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
        cursor = await self.col.aggregate(pipeline(workspace_id, starts, user_id))
        [result] = await cursor.to_list(1)
        return report(
            first,
            last,
            zone,
            user_id,
            starts,
            _figures(result["totals"][0]) if result["totals"] else None,
            [(row["_id"], _figures(row)) for row in result["byUser"]],
            {row["_id"]: _figures(row) for row in result["byDay"]},
        )
