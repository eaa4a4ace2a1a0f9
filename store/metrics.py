"""Dialer metrics: KPIs of outbound calls over whole local days, by one aggregation pipeline.

Definitions (published in schemas/records/dialer-metrics.json):
- a dial is an outbound call; it counts on the local day (in the report's time zone) of its
  startedAt, which equals its createdAt;
- a connect is a dial with disposition `connected`; a conversation is a connect with at least
  CONVERSATION_SECONDS of talk time; a voicemail is a dial with disposition `voicemail`;
- talk time is the durationSeconds of connects; rates are ratios over dials (0 without dials);
  the average talk time is over connects (0 without connects).

Days are buckets between the UTC instants of consecutive local midnights, computed here with
zoneinfo (so DST days have 23 or 25 hours) and handed to `$bucket` as boundaries. The same
pipeline runs on MongoDB and on the embedded store: no `$dateToString` time zones needed.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

CONVERSATION_SECONDS = 60
MAX_DAYS = 366
COUNTS = ("dials", "connects", "conversations", "meetingsBooked", "voicemails",
          "talkTimeSeconds")
FIGURES = ("dials", "connects", "connectRate", "conversations", "conversationRate",
           "meetingsBooked", "meetingRate", "voicemails", "talkTimeSeconds",
           "averageTalkTimeSeconds")


def day_starts(first: dt.date, last: dt.date, zone: ZoneInfo) -> list[dt.datetime]:
    """Naive UTC instants of local midnight of every day from `first` to the day after `last`.

    A midnight skipped by a DST change starts its day at the change (the first instant of that
    local date); a repeated one starts it at its first occurrence.
    """
    days = (last - first).days + 1
    starts = []
    for offset in range(days + 1):
        day = first + dt.timedelta(days=offset)
        local = dt.datetime(day.year, day.month, day.day, tzinfo=zone)
        starts.append(local.astimezone(dt.UTC).replace(tzinfo=None))
    return starts


def _is(field: str, value) -> dict:
    return {"$eq": [f"${field}", value]}


def _count_if(condition: dict) -> dict:
    return {"$sum": {"$cond": [condition, 1, 0]}}


CONNECTED = _is("disposition", "connected")
ACCUMULATORS = {
    "dials": {"$sum": 1},
    "connects": _count_if(CONNECTED),
    "conversations": _count_if(
        {"$and": [CONNECTED, {"$gte": ["$durationSeconds", CONVERSATION_SECONDS]}]}),
    "meetingsBooked": _count_if(_is("meetingBooked", True)),
    "voicemails": _count_if(_is("disposition", "voicemail")),
    "talkTimeSeconds": {"$sum": {"$cond": [CONNECTED, "$durationSeconds", 0]}},
}


def _ratio(numerator: str, denominator: str) -> dict:
    return {"$cond": [{"$eq": [f"${denominator}", 0]}, 0,
                      {"$divide": [f"${numerator}", f"${denominator}"]}]}


RATES = {"$project": {
    "_id": 1, **dict.fromkeys(COUNTS, 1),
    "connectRate": _ratio("connects", "dials"),
    "conversationRate": _ratio("conversations", "dials"),
    "meetingRate": _ratio("meetingsBooked", "dials"),
    "averageTalkTimeSeconds": _ratio("talkTimeSeconds", "connects"),
}}
EMPTY = {name: 0 for name in FIGURES}


def pipeline(workspace_id: str, starts: list[dt.datetime], user_id: str | None) -> list[dict]:
    """Totals, byUser and byDay in one pass over the range's outbound calls."""
    match = {"workspaceId": workspace_id, "direction": "outbound",
             "createdAt": {"$gte": starts[0], "$lt": starts[-1]}}
    if user_id is not None:
        match["userId"] = user_id
    return [
        {"$match": match},
        {"$facet": {
            "totals": [{"$group": {"_id": None, **ACCUMULATORS}}, RATES],
            "byUser": [{"$group": {"_id": "$userId", **ACCUMULATORS}}, RATES,
                       {"$sort": {"_id": 1}}],
            "byDay": [{"$bucket": {"groupBy": "$createdAt", "boundaries": starts,
                                   "output": ACCUMULATORS}}, RATES],
        }},
    ]


def _figures(row: dict | None) -> dict:
    return {name: row[name] for name in FIGURES} if row else dict(EMPTY)


class DialerMetrics:
    def __init__(self, db):
        self.col = db["calls"]

    async def report(self, workspace_id: str, first: dt.date, last: dt.date, zone: ZoneInfo,
                     user_id: str | None = None) -> dict:
        """The dialer-metrics result for the local days `first`..`last` (inclusive)."""
        starts = day_starts(first, last, zone)
        [result] = await self.col.aggregate(pipeline(workspace_id, starts, user_id)).to_list(1)
        by_day = {row["_id"]: row for row in result["byDay"]}
        days = []
        for index, start in enumerate(starts[:-1]):
            days.append({"date": first + dt.timedelta(days=index), "startsAt": start,
                         "endsAt": starts[index + 1], **_figures(by_day.get(start))})
        return {
            "from": first, "to": last, "timezone": zone.key, "userId": user_id,
            "startsAt": starts[0], "endsAt": starts[-1],
            "totals": _figures(result["totals"][0] if result["totals"] else None),
            "byUser": [{"userId": row["_id"], **_figures(row)} for row in result["byUser"]],
            "byDay": days,
        }
