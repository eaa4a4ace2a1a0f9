"""The backend-neutral parts of the dialer metrics (day boundaries, a call's contribution, its
quarter hour, the assembly of rows into the result) and the shape of MongoDB's pipelines. No
database: the backends are compared on the same data in test_metrics_backends.py."""

import datetime as dt
import itertools
import json
from zoneinfo import ZoneInfo

import pytest

from store.metrics import (
    COUNTS,
    FIGURES,
    assemble,
    contribution,
    day_of,
    day_starts,
    quarter_of,
)
from store.mongo.metrics import (
    changed_call_set,
    counts_pipeline,
    exact_pipeline,
    match,
    metric_fields,
    talk_pipeline,
)


def test_day_starts_are_local_midnights_in_utc():
    starts = day_starts(dt.date(2026, 3, 7), dt.date(2026, 3, 9), ZoneInfo("America/New_York"))
    assert starts == [
        dt.datetime(2026, 3, 7, 5),
        dt.datetime(2026, 3, 8, 5),
        dt.datetime(2026, 3, 9, 4),
        dt.datetime(2026, 3, 10, 4),
    ]
    hours = [(b - a) / dt.timedelta(hours=1) for a, b in itertools.pairwise(starts)]
    assert hours == [24, 23, 24]


def test_a_skipped_midnight_starts_the_day_at_the_change():
    """Santiago moved clocks from 24:00 to 01:00 on 2024-09-08: that day began at 04:00Z."""
    zone = ZoneInfo("America/Santiago")
    starts = day_starts(dt.date(2024, 9, 7), dt.date(2024, 9, 8), zone)
    assert starts[1] == dt.datetime(2024, 9, 8, 4)
    assert starts[1].replace(tzinfo=dt.UTC).astimezone(zone).hour == 1
    assert starts[2] - starts[1] == dt.timedelta(hours=23)


def test_a_full_leap_year_has_367_boundaries():
    starts = day_starts(dt.date(2024, 1, 1), dt.date(2024, 12, 31), ZoneInfo("UTC"))
    assert len(starts) == 367 and starts[-1] == dt.datetime(2025, 1, 1)


# disposition, durationSeconds, meetingBooked -> dials, connects, conversations, meetingsBooked,
# voicemails, callsToSuppressedNumbers, talkTimeSeconds
CONTRIBUTIONS = [
    ("connected", 59, False, (1, 1, 0, 0, 0, 0, 59)),
    ("connected", 60, False, (1, 1, 1, 0, 0, 0, 60)),
    ("connected", 0, True, (1, 1, 0, 1, 0, 0, 0)),
    ("connected", 3600, True, (1, 1, 1, 1, 0, 0, 3600)),
    ("voicemail", 45, False, (1, 0, 0, 0, 1, 0, 0)),  # talk time is of connects only
    ("voicemail", 45, True, (1, 0, 0, 1, 1, 0, 0)),
    ("wrong_number", 90, False, (1, 0, 0, 0, 0, 0, 0)),  # answered, but not a connect
    ("no_answer", 0, False, (1, 0, 0, 0, 0, 0, 0)),
    ("busy", 0, True, (1, 0, 0, 1, 0, 0, 0)),
    ("failed", 0, False, (1, 0, 0, 0, 0, 0, 0)),
]


@pytest.mark.parametrize("disposition,seconds,meeting,expected", CONTRIBUTIONS)
def test_a_calls_contribution_follows_the_definitions(disposition, seconds, meeting, expected):
    call = {"disposition": disposition, "durationSeconds": seconds, "meetingBooked": meeting}
    assert contribution(call) == dict(zip(COUNTS, expected, strict=True))
    suppressed = contribution({**call, "toNumberSuppressed": True})
    assert suppressed == {**contribution(call), "callsToSuppressedNumbers": 1}


QUARTERS = [
    (dt.datetime(1970, 1, 1), 0),
    (dt.datetime(1970, 1, 1, 0, 14, 59, 999000), 0),
    (dt.datetime(1970, 1, 1, 0, 15), 1),
    (dt.datetime(1969, 12, 31, 23, 59, 59, 999000), -1),  # floor, not truncation
    (dt.datetime(2026, 3, 8, 5), 1_969_940),
    (dt.datetime(2026, 3, 8, 0, 0, tzinfo=ZoneInfo("America/New_York")), 1_969_940),
]


@pytest.mark.parametrize("instant,quarter", QUARTERS, ids=[str(q[0]) for q in QUARTERS])
def test_the_quarter_hour_of_an_instant(instant, quarter):
    assert quarter_of(instant) == quarter


def test_every_midnight_of_a_zone_in_use_starts_a_quarter_hour():
    """What lets both backends count per quarter hour: a local midnight is never inside one
    (today's offsets are whole quarter hours, e.g. Chatham +12:45, Lord Howe's 30-minute DST)."""
    for name in ("Pacific/Chatham", "Australia/Lord_Howe", "Asia/Kathmandu", "America/St_Johns"):
        for start in day_starts(dt.date(2026, 1, 1), dt.date(2026, 12, 31), ZoneInfo(name)):
            assert start.minute % 15 == 0 and start.second == 0, (name, start)
    historic = day_starts(dt.date(1971, 3, 1), dt.date(1971, 3, 1), ZoneInfo("Africa/Monrovia"))
    assert historic[0] == dt.datetime(1971, 3, 1, 0, 44, 30)  # -00:44:30: inside a quarter


def test_day_of_finds_the_day_an_instant_falls_in():
    bounds = [0, 100, 250]
    assert [day_of(bounds, instant) for instant in (0, 99, 100, 249)] == [0, 0, 1, 1]


def test_assemble_adds_rows_into_totals_users_and_days():
    starts = day_starts(dt.date(2026, 5, 4), dt.date(2026, 5, 6), ZoneInfo("UTC"))
    rows = [
        ("b", 0, [2, 1, 1, 0, 0, 1, 90]),
        ("a", 0, [1, 0, 0, 1, 1, 0, 0]),
        ("b", 2, [1, 1, 0, 0, 0, 1, 30]),
        ("b", 2, [0, 0, 0, 0, 0, 0, 15]),  # talk time counted apart from its call
        (None, 2, [1, 0, 0, 0, 0, 0, 0]),
    ]
    result = assemble(dt.date(2026, 5, 4), dt.date(2026, 5, 6), ZoneInfo("UTC"), None, starts, rows)
    assert result["totals"] == {
        "dials": 5,
        "connects": 2,
        "connectRate": 0.4,
        "conversations": 1,
        "conversationRate": 0.2,
        "meetingsBooked": 1,
        "meetingRate": 0.2,
        "voicemails": 1,
        "talkTimeSeconds": 135,
        "averageTalkTimeSeconds": 67.5,
        "callsToSuppressedNumbers": 2,
    }
    assert [row["userId"] for row in result["byUser"]] == ["a", "b", None]
    assert [row["dials"] for row in result["byUser"]] == [1, 3, 1]
    assert result["byUser"][1]["talkTimeSeconds"] == 135
    assert [day["dials"] for day in result["byDay"]] == [3, 0, 2]
    assert all(result["byDay"][1][name] == 0 for name in FIGURES)
    empty = assemble(dt.date(2026, 5, 4), dt.date(2026, 5, 6), ZoneInfo("UTC"), "a", starts, [])
    assert empty["byUser"] == [] and all(empty["totals"][name] == 0 for name in FIGURES)


def pipelines(starts: list[dt.datetime], user: str | None = "user-1") -> list[list[dict]]:
    query = match("ws-1", starts, user)
    return [counts_pipeline(query), talk_pipeline(query), exact_pipeline(query, {7, 9}, True)]


def test_the_pipelines_are_workspace_scoped_and_portable():
    starts = day_starts(dt.date(2026, 1, 1), dt.date(2026, 1, 2), ZoneInfo("Europe/Berlin"))
    for stages in pipelines(starts):
        assert [next(iter(stage)) for stage in stages] == ["$match", "$group"]
        first = stages[0]["$match"]
        assert list(first)[:2] == ["workspaceId", "direction"]
        assert (first["workspaceId"], first["direction"], first["userId"]) == (
            "ws-1",
            "outbound",
            "user-1",
        )
        assert first["createdAt"] == {"$gte": starts[0], "$lt": starts[-1]}
        text = json.dumps(stages, default=str)
        # No server-side time zones, and only what FerretDB 1.24 (the wire tier) implements.
        for absent in ("$dateToString", "timezone", "$facet", "$bucket", "$cond", "$eq", "$and"):
            assert absent not in text, absent
        # One accumulator per group: FerretDB 1.24 computes only the first of several.
        group = stages[1]["$group"]
        assert len(group) == 2 and "_id" in group, group


def test_the_counts_are_grouped_by_user_quarter_and_their_0_1_counts():
    """So that a group's rows are at most users x quarter hours x 16 combinations."""
    starts = day_starts(dt.date(2026, 1, 1), dt.date(2026, 1, 1), ZoneInfo("UTC"))
    counts, talk, exact = pipelines(starts, None)
    assert "userId" not in counts[0]["$match"]
    assert counts[1]["$group"]["_id"] == {
        "u": "$userId",
        "q": "$quarter",
        **{name: f"$m.{name}" for name in COUNTS if name != "talkTimeSeconds"},
    }
    assert talk[0]["$match"]["disposition"] == "connected"
    assert talk[1]["$group"] == {
        "_id": {"u": "$userId", "q": "$quarter"},
        "t": {"$sum": "$m.talkTimeSeconds"},
    }
    quarter = dt.timedelta(minutes=15)
    epoch = dt.datetime(1970, 1, 1)
    assert exact[0]["$match"]["$or"] == [
        {"createdAt": {"$gte": epoch + 7 * quarter, "$lt": epoch + 8 * quarter}},
        {"createdAt": {"$gte": epoch + 9 * quarter, "$lt": epoch + 10 * quarter}},
        {"quarter": {"$exists": False}},
    ]


def test_the_stored_contribution_of_a_call():
    call = {
        "createdAt": dt.datetime(2026, 3, 8, 5, 14, 59),
        "disposition": "connected",
        "durationSeconds": 75,
        "meetingBooked": False,
    }
    assert metric_fields(call) == {"quarter": 1_969_940, "m": contribution(call)}


def test_a_changed_call_gets_its_contribution_in_the_same_set():
    current = {
        "createdAt": dt.datetime(2026, 3, 8, 5, 20),
        "disposition": "connected",
        "durationSeconds": 75,
        "meetingBooked": False,
        "notes": None,
        "toNumberSuppressed": True,  # as recorded: a change keeps it, and its count
    }
    changes = {"disposition": "voicemail", "updatedAt": dt.datetime(2026, 3, 9)}
    assert changed_call_set(current, changes) == {
        "disposition": "voicemail",
        "updatedAt": dt.datetime(2026, 3, 9),
        "quarter": 1_969_941,
        "m": {
            "dials": 1,
            "connects": 0,
            "conversations": 0,
            "meetingsBooked": 0,
            "voicemails": 1,
            "callsToSuppressedNumbers": 1,
            "talkTimeSeconds": 0,
        },
    }
    booked = changed_call_set(current, {"meetingBooked": True, "durationSeconds": 30})
    assert booked["m"] == {
        **contribution(current),
        "meetingsBooked": 1,
        "conversations": 0,
        "talkTimeSeconds": 30,
    }
