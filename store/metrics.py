"""Dialer metrics: KPIs of outbound calls over whole local days, counted in the database.

Definitions (published in schemas/records/dialer-metrics.json):
- a dial is an outbound call; it counts on the local day (in the report's time zone) of its
  startedAt, which equals its createdAt;
- a connect is a dial with disposition `connected`; a conversation is a connect with at least
  CONVERSATION_SECONDS of talk time; a voicemail is a dial with disposition `voicemail`;
- talk time is the durationSeconds of connects; rates are ratios over dials (0 without dials);
  the average talk time is over connects (0 without connects);
- callsToSuppressedNumbers counts the dials whose toNumber was on the do-not-call list when the
  call was recorded (its toNumberSuppressed).

Days are buckets between the UTC instants of consecutive local midnights, computed here with
zoneinfo (so DST days have 23 or 25 hours). Both backends count per user and quarter hour of
UTC (`quarter_of`), from each call's `contribution`: every UTC offset and DST change in use
falls on a quarter hour, so a local midnight starts a quarter hour and a quarter hour lies in one
day (`day_of` finds it). Where a boundary falls inside a quarter hour (historical offsets such
as Monrovia's -00:44:30 until 1972), the backends count that quarter's calls by their exact
instant. `assemble` adds the rows of counts into totals, users and days, and `report` shapes the
published result.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from zoneinfo import ZoneInfo

CONVERSATION_SECONDS = 60
MAX_DAYS = 366
# talkTimeSeconds stays last: the MongoDB report appends it after the 0/1 counts.
COUNTS = (
    "dials",
    "connects",
    "conversations",
    "meetingsBooked",
    "voicemails",
    "callsToSuppressedNumbers",
    "talkTimeSeconds",
)
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
    "callsToSuppressedNumbers",
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


EPOCH = dt.datetime(1970, 1, 1)
QUARTER = dt.timedelta(minutes=15)
QUARTER_MS = 15 * 60 * 1000


def quarter_of(instant: dt.datetime) -> int:
    """The quarter hour of UTC, counted from the epoch, that an instant (naive UTC, or aware)
    falls in."""
    if instant.tzinfo is not None:
        instant = instant.astimezone(dt.UTC).replace(tzinfo=None)
    return (instant - EPOCH) // QUARTER


def contribution(call: Mapping[str, Any]) -> dict[str, int]:
    """What one outbound call adds to each of COUNTS (the definitions above), from its
    disposition, durationSeconds, meetingBooked and toNumberSuppressed (absent: false)."""
    connected = call["disposition"] == "connected"
    talk = (call["durationSeconds"] or 0) if connected else 0
    return {
        "dials": 1,
        "connects": int(connected),
        "conversations": int(connected and talk >= CONVERSATION_SECONDS),
        "meetingsBooked": int(bool(call["meetingBooked"])),
        "voicemails": int(call["disposition"] == "voicemail"),
        "callsToSuppressedNumbers": int(bool(call.get("toNumberSuppressed"))),
        "talkTimeSeconds": talk,
    }


def day_of(bounds: Sequence[int], instant_ms: int) -> int:
    """The index of the day (between `bounds`, epoch milliseconds of the day starts) that an
    instant in the range falls in."""
    return bisect.bisect_right(bounds, instant_ms) - 1


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
        "callsToSuppressedNumbers": counts["callsToSuppressedNumbers"],
    }


def assemble(
    first: dt.date,
    last: dt.date,
    zone: ZoneInfo,
    user_id: str | None,
    starts: list[dt.datetime],
    rows: Iterable[tuple[str | None, int, Sequence[int]]],
) -> dict:
    """The dialer-metrics result from rows of (userId, day index, COUNTS): each row is added
    into the totals, its user and its day, and the figures computed from the sums."""
    totals: list[int] = []
    users: dict[str | None, list[int]] = {}
    days: dict[int, list[int]] = {}
    for user, day, counts in rows:
        for into in (totals, users.setdefault(user, []), days.setdefault(day, [])):
            if not into:
                into.extend([0] * len(COUNTS))
            for index, value in enumerate(counts):
                into[index] += value

    def figures(sums: list[int]) -> dict:
        return rates(dict(zip(COUNTS, sums, strict=True)))

    ordered = sorted(users, key=lambda user: (user is None, user or ""))

    return report(
        first,
        last,
        zone,
        user_id,
        starts,
        figures(totals) if totals else None,
        [(user, figures(users[user])) for user in ordered],
        {starts[day]: figures(sums) for day, sums in days.items()},
    )


def report(
    first: dt.date,
    last: dt.date,
    zone: ZoneInfo,
    user_id: str | None,
    starts: list[dt.datetime],
    totals: dict | None,
    by_user: list[tuple[str | None, dict]],
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
