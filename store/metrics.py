"""Dialer metrics: KPIs of outbound calls over whole local days, by one aggregation pipeline.

Definitions (published in schemas/records/dialer-metrics.json):
- a dial is an outbound call; it counts on the local day (in the report's time zone) of its
  startedAt, which equals its createdAt;
- a connect is a dial with disposition `connected`; a conversation is a connect with at least
  CONVERSATION_SECONDS of talk time; a voicemail is a dial with disposition `voicemail`;
- talk time is the durationSeconds of connects; rates are ratios over dials (0 without dials);
  the average talk time is over connects (0 without connects).

Days are buckets between the UTC instants of consecutive local midnights, computed here with
zoneinfo (so DST days have 23 or 25 hours); each backend counts per user and day between those
boundaries, and `report` turns the counts into the published figures.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

CONVERSATION_SECONDS = 60
MAX_DAYS = 366
COUNTS = ("dials", "connects", "conversations", "meetingsBooked", "voicemails", "talkTimeSeconds")
FIGURES = (
    "dials",
    "connects",
    "connectRate",
    "conversations",
    "conversationRate",
    "meetingsBooked",
    "meetingRate",
    "voicemails",
    "talkTimeSeconds",
    "averageTalkTimeSeconds",
)


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


EMPTY = {name: 0 for name in FIGURES}


def rates(counts: dict) -> dict:
    """The published figures of one row of counts (COUNTS): the counts and their ratios."""
    dials, connects = counts["dials"], counts["connects"]
    return {
        "dials": dials,
        "connects": connects,
        "connectRate": connects / dials if dials else 0,
        "conversations": counts["conversations"],
        "conversationRate": counts["conversations"] / dials if dials else 0,
        "meetingsBooked": counts["meetingsBooked"],
        "meetingRate": counts["meetingsBooked"] / dials if dials else 0,
        "voicemails": counts["voicemails"],
        "talkTimeSeconds": counts["talkTimeSeconds"],
        "averageTalkTimeSeconds": counts["talkTimeSeconds"] / connects if connects else 0,
    }


def report(
    first: dt.date,
    last: dt.date,
    zone: ZoneInfo,
    user_id: str | None,
    starts: list[dt.datetime],
    totals: dict | None,
    by_user: list[tuple[str, dict]],
    by_day: dict[dt.datetime, dict],
) -> dict:
    """The dialer-metrics result from figures per user (sorted by id) and per day start."""
    days = []
    for index, start in enumerate(starts[:-1]):
        days.append(
            {
                "date": first + dt.timedelta(days=index),
                "startsAt": start,
                "endsAt": starts[index + 1],
                **by_day.get(start, EMPTY),
            }
        )
    return {
        "from": first,
        "to": last,
        "timezone": zone.key,
        "userId": user_id,
        "startsAt": starts[0],
        "endsAt": starts[-1],
        "totals": totals or dict(EMPTY),
        "byUser": [{"userId": user, **figures} for user, figures in by_user],
        "byDay": days,
    }
