"""Day boundaries of the dialer metrics and the shape of their pipeline."""

import datetime as dt
import itertools
import json
from zoneinfo import ZoneInfo

from store.metrics import day_starts
from store.mongo.metrics import pipeline


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


def test_the_pipeline_is_workspace_scoped_and_portable():
    starts = day_starts(dt.date(2026, 1, 1), dt.date(2026, 1, 2), ZoneInfo("Europe/Berlin"))
    stages = pipeline("ws-1", starts, "user-1")
    assert stages[0] == {
        "$match": {
            "workspaceId": "ws-1",
            "direction": "outbound",
            "userId": "user-1",
            "createdAt": {"$gte": starts[0], "$lt": starts[-1]},
        }
    }
    text = json.dumps(stages, default=str)
    assert "$dateToString" not in text and "timezone" not in text  # no server-side zones
    assert stages[1]["$facet"]["byDay"][0]["$bucket"]["boundaries"] == starts
