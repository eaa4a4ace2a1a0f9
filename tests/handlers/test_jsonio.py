"""The API's JSON writing: exact timestamp format, and the same text the standard library
writes for everything else."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from handlers import jsonio


@pytest.mark.parametrize(
    "value, text",
    [
        (dt.datetime(2026, 11, 21, 9, 30), "2026-11-21T09:30:00.000Z"),
        (dt.datetime(2026, 11, 21, 9, 30, 5, 123999), "2026-11-21T09:30:05.123Z"),  # truncated
        (dt.datetime(1999, 1, 2, 3, 4, 5, 6000), "1999-01-02T03:04:05.006Z"),
        (
            dt.datetime(2026, 11, 21, 10, 30, 0, 500, tzinfo=dt.timezone(dt.timedelta(hours=1))),
            "2026-11-21T09:30:00.000Z",
        ),
        (dt.datetime(2026, 11, 21, 9, 30, tzinfo=dt.UTC), "2026-11-21T09:30:00.000Z"),
    ],
)
def test_timestamps_are_iso_8601_utc_with_milliseconds(value, text):
    assert jsonio.format_timestamp(value) == text
    assert jsonio.dumps({"at": value}) == '{"at":"' + text + '"}'
    assert jsonio.dumps_bytes([value]) == b'["' + text.encode() + b'"]'


def test_everything_else_is_what_the_standard_library_writes():
    record = {
        "id": "5f0c",
        "name": 'Zoë \u2028 "quoted" \\ \x01 emoji \U0001f600',
        "count": 3,
        "ratio": 0.25,
        "big": 2**62,
        "none": None,
        "yes": True,
        "list": [1, "two", {"nested": []}],
        "day": dt.date(2026, 11, 21),
        7: "int key",
    }
    expected = json.dumps(
        {**record, "day": "2026-11-21"}, ensure_ascii=False, separators=(",", ":")
    )
    assert jsonio.dumps(record) == expected
    assert jsonio.dumps_bytes(record) == expected.encode()
    assert json.loads(jsonio.dumps(record, indent=2)) == json.loads(expected)


def test_unknown_types_are_refused():
    with pytest.raises(TypeError):
        jsonio.dumps({"x": object()})
